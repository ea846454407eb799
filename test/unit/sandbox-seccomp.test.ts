/**
 * The sandbox's seccomp program, read back from its bytes: a small classic-BPF interpreter (the
 * few instructions the kernel would run here) evaluates it for each call, so every refusal and
 * every ordinary call is checked as the kernel would decide it, not as the generator meant it.
 */
import { describe, expect, it } from "vitest";
import {
  AUDIT_ARCH,
  BPF,
  CLONE_NAMESPACE_FLAGS,
  ERRNO,
  SECCOMP_RET,
  SECCOMP_RULES,
  seccompFor,
  SYSCALLS,
  TIOCLINUX,
  TIOCSTI,
  type SeccompArch,
} from "../../src/sandbox/seccomp-filter.js";

const { EPERM, ENOSYS, EAFNOSUPPORT } = ERRNO;

/** Runs the program on one `struct seccomp_data`; returns the filter's verdict. */
function run(program: Buffer, data: { nr: number; arch: number; args?: bigint[] }): number {
  const mem = Buffer.alloc(64);
  mem.writeInt32LE(data.nr, 0);
  mem.writeUInt32LE(data.arch, 4);
  (data.args ?? []).forEach((a, i) => mem.writeBigUInt64LE(BigInt.asUintN(64, a), 16 + 8 * i));
  let A = 0;
  let pc = 0;
  const len = program.length / 8;
  for (let steps = 0; steps < 10_000; steps++) {
    if (pc >= len) throw new Error(`ran off the end at ${pc}`);
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    pc++;
    switch (code) {
      case BPF.LD_W_ABS:
        if (k % 4 !== 0 || k + 4 > 64) throw new Error(`bad load offset ${k}`);
        A = mem.readUInt32LE(k);
        break;
      case BPF.JEQ_K:
        pc += A === k ? jt : jf;
        break;
      case BPF.JGE_K:
        pc += A >= k ? jt : jf;
        break;
      case BPF.JSET_K:
        pc += (A & k) >>> 0 !== 0 ? jt : jf;
        break;
      case BPF.RET_K:
        return k;
      default:
        throw new Error(`unknown opcode 0x${code.toString(16)} at ${pc - 1}`);
    }
  }
  throw new Error("no verdict");
}

const ALLOW = SECCOMP_RET.ALLOW;
const errno = (e: number) => SECCOMP_RET.ERRNO | e;

for (const arch of ["x64", "arm64"] as SeccompArch[]) {
  const program = seccompFor(arch)!;
  const call = (name: string, ...args: (number | bigint)[]) => {
    const nr = SYSCALLS[name]?.[arch];
    if (nr === undefined) throw new Error(`${name} has no number on ${arch}`);
    return run(program, { nr, arch: AUDIT_ARCH[arch], args: args.map((a) => BigInt(a)) });
  };
  const has = (name: string) => SYSCALLS[name]?.[arch] !== undefined;

  describe(`the seccomp program (${arch})`, () => {
    it("is whole instructions, and short enough for the kernel (4096)", () => {
      expect(program.length % 8).toBe(0);
      expect(program.length / 8).toBeLessThan(4096);
    });

    it.each([
      ["unshare", [0x10000000], EPERM],
      ["unshare", [0x400], EPERM], // CLONE_FS too: no unshare at all, as Flatpak
      ["setns", [3, 0], EPERM],
      ["mount", [0, 0, 0, 0], EPERM],
      ["umount2", [0, 0], EPERM],
      ["pivot_root", [], EPERM],
      ["chroot", [], EPERM],
      ["keyctl", [0], EPERM],
      ["add_key", [], EPERM],
      ["request_key", [], EPERM],
      ["bpf", [0], EPERM],
      ["userfaultfd", [0], EPERM],
      ["perf_event_open", [], EPERM],
      ["kexec_load", [], EPERM],
      ["kexec_file_load", [], EPERM],
      ["init_module", [], EPERM],
      ["finit_module", [], EPERM],
      ["delete_module", [], EPERM],
      ["syslog", [], EPERM],
      ["clock_settime", [], EPERM],
      ["open_by_handle_at", [], EPERM],
      ["kcmp", [], EPERM],
      ["clone3", [0, 88], ENOSYS],
      ["fsopen", [], ENOSYS],
      ["open_tree", [], ENOSYS],
      ["move_mount", [], ENOSYS],
      ["mount_setattr", [], ENOSYS],
      ["io_uring_setup", [8, 0], ENOSYS],
      ["io_uring_enter", [], ENOSYS],
    ] as const)("refuses %s%j", (name, args, e) => {
      expect(call(name, ...args)).toBe(errno(e));
    });

    it.each([
      ["CLONE_NEWUSER", 0x10000000],
      ["CLONE_NEWNS", 0x20000],
      ["CLONE_NEWNET", 0x40000000],
      ["CLONE_NEWPID", 0x20000000],
      ["CLONE_NEWIPC", 0x08000000],
      ["CLONE_NEWUTS", 0x04000000],
      ["CLONE_NEWCGROUP", 0x02000000],
    ])("refuses clone with %s among thread flags", (_name, flag) => {
      expect(call("clone", flag | 0x11 /* SIGCHLD */)).toBe(errno(EPERM));
      expect(call("clone", flag | 0x3d0f00 /* pthread_create's */)).toBe(errno(EPERM));
    });

    it("allows clone for a fork and a thread, and the everyday calls", () => {
      expect(call("clone", 0x1200011)).toBe(ALLOW); // fork(): CHILD_SETTID|CHILD_CLEARTID|SIGCHLD
      expect(call("clone", 0x3d0f00)).toBe(ALLOW); // pthread_create
      expect(call("clone", 0x4111)).toBe(ALLOW); // posix_spawn: CLONE_VM|CLONE_VFORK|SIGCHLD
      expect(call("read", 0, 0, 10)).toBe(ALLOW);
      expect(call("write", 1, 0, 10)).toBe(ALLOW);
      expect(call("execve", 0, 0, 0)).toBe(ALLOW);
      expect(call("ptrace", 16 /* PTRACE_ATTACH */, 2)).toBe(ALLOW); // the pid namespace confines it
      expect(call("process_vm_readv", 2)).toBe(ALLOW);
      if (has("fork")) expect(call("fork")).toBe(ALLOW);
      // A number no rule names (getpid on x86_64 is 39, on arm64 172).
      expect(run(program, { nr: arch === "x64" ? 39 : 172, arch: AUDIT_ARCH[arch] })).toBe(ALLOW);
    });

    it("compares the namespace bits on the flags' low word only, as the kernel reads them", () => {
      expect(call("clone", (1n << 32n) | 0x11n)).toBe(ALLOW);
      expect(call("clone", (1n << 40n) | BigInt(CLONE_NAMESPACE_FLAGS))).toBe(errno(EPERM));
    });

    it("refuses TIOCSTI and TIOCLINUX, and only those ioctls", () => {
      expect(call("ioctl", 0, TIOCSTI, 0)).toBe(errno(EPERM));
      // The kernel takes the request as 32 bits: high bits set do not get around it (Flatpak CVE-2019-10063).
      expect(call("ioctl", 0, (1n << 32n) | BigInt(TIOCSTI), 0)).toBe(errno(EPERM));
      expect(call("ioctl", 0, TIOCLINUX, 0)).toBe(errno(EPERM));
      expect(call("ioctl", 0, 0x5401 /* TCGETS */, 0)).toBe(ALLOW);
      expect(call("ioctl", 0, 0x5413 /* TIOCGWINSZ */, 0)).toBe(ALLOW);
    });

    it("allows Docker's personalities and refuses the others", () => {
      for (const p of [0, 0x8, 0x20000, 0x20008, 0xffffffff])
        expect(call("personality", p)).toBe(ALLOW);
      expect(call("personality", 0x0400000 /* READ_IMPLIES_EXEC */)).toBe(errno(EPERM));
      expect(call("personality", 0x0000001 /* PER_LINUX32-ish */)).toBe(errno(EPERM));
    });

    it("allows unix, IPv4, IPv6 and netlink sockets and no other family", () => {
      for (const f of [1, 2, 10, 16]) expect(call("socket", f, 1, 0)).toBe(ALLOW);
      for (const f of [17 /* AF_PACKET */, 40 /* AF_VSOCK */, 30 /* AF_TIPC */, 38 /* AF_ALG */, 5])
        expect(call("socket", f, 1, 0)).toBe(errno(EAFNOSUPPORT));
    });

    it("kills a call made through another architecture's entry", () => {
      const other = arch === "x64" ? 0x40000003 /* AUDIT_ARCH_I386 */ : 0x40000028; /* ARM */
      expect(run(program, { nr: 0, arch: other })).toBe(SECCOMP_RET.KILL_PROCESS);
      expect(run(program, { nr: SYSCALLS.keyctl![arch]!, arch: other })).toBe(
        SECCOMP_RET.KILL_PROCESS,
      );
    });

    if (arch === "x64")
      it("refuses x32 calls (x86_64's arch value, numbers with bit 30 set)", () => {
        expect(run(program, { nr: 0x40000000 + 250, arch: AUDIT_ARCH.x64 })).toBe(errno(ENOSYS));
      });

    it("refuses every rule's call here, as the rule says", () => {
      for (const r of SECCOMP_RULES) {
        if (!has(r.call) || "arg" in r) continue;
        expect([r.call, call(r.call)]).toEqual([r.call, errno(r.errno)]);
      }
    });
  });
}

describe("seccompFor", () => {
  it("has no program for an architecture without a table", () => {
    expect(seccompFor("ia32")).toBeNull();
    expect(seccompFor("riscv64")).toBeNull();
  });

  it("names only calls it has numbers for", () => {
    for (const r of SECCOMP_RULES) expect(SYSCALLS[r.call], r.call).toBeDefined();
  });
});
