/**
 * The seccomp filter every sandbox runs under (bwrap `--seccomp FD`): a classic BPF program, an
 * array of `struct sock_filter`, built here because no well-kept npm library makes one. Pure:
 * test/unit/sandbox-seccomp.test.ts runs the bytes through a small BPF interpreter, syscall by
 * syscall.
 *
 * Why a filter on top of the namespaces (docs/security.md, "Why each choice"): the sandbox's
 * user has no capabilities, so mount, keyctl-on-others, module loading and the like fail anyway;
 * but a process that could make a user namespace of its own would hold every capability in it
 * and reach namespaced kernel interfaces (nf_tables, mount, the bug class behind many local
 * privilege escalations). bwrap's `--disable-userns` stops the new user namespace; this filter
 * stops the calls themselves, and the kernel interfaces no coding agent needs (keyrings, eBPF,
 * userfaultfd, perf, io_uring), so a kernel bug there is out of reach too.
 *
 * The lists follow Flatpak's (common/flatpak-run.c, setup_seccomp: its blocklist and its
 * "non-devel" list but ptrace) and Docker's default profile (moby profiles/seccomp/default.json:
 * what it allows only with a capability the sandbox does not have). What each returns:
 * - EPERM, as both do, for a refused call;
 * - ENOSYS for clone3 (seccomp cannot read its flags, which are in memory: libc then falls back
 *   to clone, whose flags it can read), the new mount API and io_uring, so programs fall back as
 *   on an older kernel;
 * - EAFNOSUPPORT for a socket family other than unix, IPv4, IPv6 and netlink (Flatpak's rule);
 * - the whole process killed for a call through another architecture's entry (an x86_64 process
 *   can make i386 calls through `int 0x80`, with other numbers this filter would not match).
 * ptrace and process_vm_readv/writev stay allowed, as in Docker on kernels from 4.8 (where
 * ptrace can no longer step around seccomp): the pid namespace leaves the sandbox only its own
 * processes to trace, and debuggers keep working.
 */

/** `struct seccomp_data`: where the filter reads. Arguments are 64-bit; little-endian here. */
const DATA = { nr: 0, arch: 4, argLow: (i: number) => 16 + 8 * i } as const;

/** Classic BPF opcodes (linux/filter.h, linux/bpf_common.h). */
export const BPF = {
  LD_W_ABS: 0x20,
  JEQ_K: 0x15,
  JGE_K: 0x35,
  JSET_K: 0x45,
  RET_K: 0x06,
} as const;

/** Filter results (linux/seccomp.h). */
export const SECCOMP_RET = {
  KILL_PROCESS: 0x80000000,
  ERRNO: 0x00050000,
  ALLOW: 0x7fff0000,
} as const;

export const ERRNO = { EPERM: 1, ENOSYS: 38, EAFNOSUPPORT: 97 } as const;

/** The architectures with a table here; anything else gets no sandbox (see seccompFor). */
export type SeccompArch = "x64" | "arm64";

/** AUDIT_ARCH_* (linux/audit.h): the ELF machine, 64-bit and little-endian bits. */
export const AUDIT_ARCH: Record<SeccompArch, number> = {
  x64: 0xc000003e,
  arm64: 0xc00000b7,
};

/** x86_64's x32 ABI: the same arch value, syscall numbers with this bit set. */
const X32_SYSCALL_BIT = 0x40000000;

/** The namespace flags of clone(2): CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET. */
export const CLONE_NAMESPACE_FLAGS = 0x7e020000;

/** ioctl requests that push input into, or paste through, a terminal (Flatpak, CVE-2017-5226, CVE-2023-28100). */
export const TIOCSTI = 0x5412;
export const TIOCLINUX = 0x541c;

/** personality(2) values Docker allows: the default, UNAME26, ADDR_NO_RANDOMIZE, both, and the query. */
export const PERSONALITY_ALLOWED = [0x0, 0x8, 0x20000, 0x20008, 0xffffffff] as const;

/** socket(2) families a coding agent needs: AF_UNIX, AF_INET, AF_INET6, AF_NETLINK (interfaces, name lookup). */
export const SOCKET_FAMILIES_ALLOWED = [1, 2, 10, 16] as const;

/**
 * Syscall numbers (x86_64: asm/unistd_64.h; arm64: asm-generic/unistd.h). A name missing for an
 * architecture does not exist there (arm64 has no iopl, no modify_ldt, no fork).
 */
export const SYSCALLS: Record<string, Partial<Record<SeccompArch, number>>> = {
  read: { x64: 0, arm64: 63 },
  write: { x64: 1, arm64: 64 },
  ioctl: { x64: 16, arm64: 29 },
  socket: { x64: 41, arm64: 198 },
  clone: { x64: 56, arm64: 220 },
  fork: { x64: 57 },
  execve: { x64: 59, arm64: 221 },
  ptrace: { x64: 101, arm64: 117 },
  process_vm_readv: { x64: 310, arm64: 270 },
  syslog: { x64: 103, arm64: 116 },
  uselib: { x64: 134 },
  personality: { x64: 135, arm64: 92 },
  vhangup: { x64: 153, arm64: 58 },
  modify_ldt: { x64: 154 },
  pivot_root: { x64: 155, arm64: 41 },
  _sysctl: { x64: 156 },
  chroot: { x64: 161, arm64: 51 },
  acct: { x64: 163, arm64: 89 },
  settimeofday: { x64: 164, arm64: 170 },
  mount: { x64: 165, arm64: 40 },
  umount2: { x64: 166, arm64: 39 },
  swapon: { x64: 167, arm64: 224 },
  swapoff: { x64: 168, arm64: 225 },
  reboot: { x64: 169, arm64: 142 },
  iopl: { x64: 172 },
  ioperm: { x64: 173 },
  init_module: { x64: 175, arm64: 105 },
  delete_module: { x64: 176, arm64: 106 },
  quotactl: { x64: 179, arm64: 60 },
  nfsservctl: { x64: 180, arm64: 42 },
  lookup_dcookie: { x64: 212, arm64: 18 },
  clock_settime: { x64: 227, arm64: 112 },
  mbind: { x64: 237, arm64: 235 },
  set_mempolicy: { x64: 238, arm64: 237 },
  get_mempolicy: { x64: 239, arm64: 236 },
  kexec_load: { x64: 246, arm64: 104 },
  add_key: { x64: 248, arm64: 217 },
  request_key: { x64: 249, arm64: 218 },
  keyctl: { x64: 250, arm64: 219 },
  migrate_pages: { x64: 256, arm64: 238 },
  unshare: { x64: 272, arm64: 97 },
  move_pages: { x64: 279, arm64: 239 },
  perf_event_open: { x64: 298, arm64: 241 },
  fanotify_init: { x64: 300, arm64: 262 },
  name_to_handle_at: { x64: 303, arm64: 264 },
  open_by_handle_at: { x64: 304, arm64: 265 },
  clock_adjtime: { x64: 305, arm64: 266 },
  setns: { x64: 308, arm64: 268 },
  kcmp: { x64: 312, arm64: 272 },
  finit_module: { x64: 313, arm64: 273 },
  kexec_file_load: { x64: 320, arm64: 294 },
  bpf: { x64: 321, arm64: 280 },
  userfaultfd: { x64: 323, arm64: 282 },
  io_uring_setup: { x64: 425, arm64: 425 },
  io_uring_enter: { x64: 426, arm64: 426 },
  io_uring_register: { x64: 427, arm64: 427 },
  open_tree: { x64: 428, arm64: 428 },
  move_mount: { x64: 429, arm64: 429 },
  fsopen: { x64: 430, arm64: 430 },
  fsconfig: { x64: 431, arm64: 431 },
  fsmount: { x64: 432, arm64: 432 },
  fspick: { x64: 433, arm64: 433 },
  clone3: { x64: 435, arm64: 435 },
  mount_setattr: { x64: 442, arm64: 442 },
  quotactl_fd: { x64: 443, arm64: 443 },
};

/** One refusal: a call, or a call with a given argument. Arguments are compared on their low 32 bits (all of these are int-sized in the kernel). */
export type SeccompRule =
  | { call: string; errno: number; why: string }
  | { call: string; errno: number; why: string; arg: number; anyBitOf: number }
  | { call: string; errno: number; why: string; arg: number; equals: number }
  | { call: string; errno: number; why: string; arg: number; notIn: readonly number[] };

const { EPERM, ENOSYS, EAFNOSUPPORT } = ERRNO;

const each = (calls: string[], errno: number, why: string): SeccompRule[] =>
  calls.map((call) => ({ call, errno, why }));

/** What the sandbox refuses, in the order the program checks. */
export const SECCOMP_RULES: readonly SeccompRule[] = [
  ...each(["unshare", "setns"], EPERM, "no new namespaces, no entering others"),
  {
    call: "clone",
    errno: EPERM,
    why: "threads and forks, but no new namespaces",
    arg: 0,
    anyBitOf: CLONE_NAMESPACE_FLAGS,
  },
  {
    call: "clone3",
    errno: ENOSYS,
    why: "its flags are out of seccomp's reach: libc falls back to clone",
  },
  ...each(["mount", "umount2", "pivot_root", "chroot"], EPERM, "no changing the file system view"),
  ...each(
    ["open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"],
    ENOSYS,
    "the new mount API (Flatpak, GHSA-67h7-w3jq-vh4q)",
  ),
  ...each(["add_key", "keyctl", "request_key"], EPERM, "the kernel keyrings"),
  ...each(
    ["bpf", "userfaultfd", "perf_event_open"],
    EPERM,
    "eBPF, userfaultfd and perf: kernel attack surface",
  ),
  ...each(
    ["io_uring_setup", "io_uring_enter", "io_uring_register"],
    ENOSYS,
    "io_uring (Docker's default refuses it)",
  ),
  ...each(
    ["init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot"],
    EPERM,
    "kernel modules and kexec",
  ),
  ...each(
    ["swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "nfsservctl"],
    EPERM,
    "system administration",
  ),
  ...each(["settimeofday", "clock_settime", "clock_adjtime"], EPERM, "the system clock"),
  ...each(
    ["syslog", "lookup_dcookie", "fanotify_init", "name_to_handle_at", "open_by_handle_at"],
    EPERM,
    "host-wide views",
  ),
  ...each(
    ["mbind", "set_mempolicy", "get_mempolicy", "migrate_pages", "move_pages"],
    EPERM,
    "NUMA memory operations",
  ),
  ...each(
    ["uselib", "_sysctl", "modify_ldt", "iopl", "ioperm", "vhangup", "kcmp"],
    EPERM,
    "obsolete or hardware-level",
  ),
  { call: "ioctl", errno: EPERM, why: "pushing input into a terminal", arg: 1, equals: TIOCSTI },
  {
    call: "ioctl",
    errno: EPERM,
    why: "pasting through a virtual console",
    arg: 1,
    equals: TIOCLINUX,
  },
  {
    call: "personality",
    errno: EPERM,
    why: "no other execution domains",
    arg: 0,
    notIn: PERSONALITY_ALLOWED,
  },
  {
    call: "socket",
    errno: EAFNOSUPPORT,
    why: "socket families beyond unix, IP and netlink",
    arg: 0,
    notIn: SOCKET_FAMILIES_ALLOWED,
  },
];

export interface SockFilter {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

const ins = (code: number, k: number, jt = 0, jf = 0): SockFilter => ({ code, jt, jf, k });
const loadNr = () => ins(BPF.LD_W_ABS, DATA.nr);
const ret = (k: number) => ins(BPF.RET_K, k);
const refuse = (errno: number) => ret(SECCOMP_RET.ERRNO | errno);

/**
 * The program for one architecture. Shape: check the arch (else kill), load the syscall
 * number, then one block per rule; every block leaves the number in the accumulator again, so
 * blocks are independent and jump only within themselves (offsets stay far below 255). The
 * last instruction allows.
 */
export function seccompProgram(
  arch: SeccompArch,
  rules: readonly SeccompRule[] = SECCOMP_RULES,
): SockFilter[] {
  const p: SockFilter[] = [
    ins(BPF.LD_W_ABS, DATA.arch),
    ins(BPF.JEQ_K, AUDIT_ARCH[arch], 1, 0),
    ret(SECCOMP_RET.KILL_PROCESS),
    loadNr(),
  ];
  if (arch === "x64") p.push(ins(BPF.JGE_K, X32_SYSCALL_BIT, 0, 1), refuse(ENOSYS));
  for (const r of rules) {
    const nr = SYSCALLS[r.call]?.[arch];
    if (nr === undefined) continue; // not a call on this architecture
    if (!("arg" in r)) {
      p.push(ins(BPF.JEQ_K, nr, 0, 1), refuse(r.errno));
      continue;
    }
    const loadArg = ins(BPF.LD_W_ABS, DATA.argLow(r.arg));
    if ("anyBitOf" in r) {
      // nr? → load arg → any bit set? → refuse; else reload nr.
      p.push(ins(BPF.JEQ_K, nr, 0, 4), loadArg, ins(BPF.JSET_K, r.anyBitOf, 0, 1));
      p.push(refuse(r.errno), loadNr());
    } else if ("equals" in r) {
      p.push(ins(BPF.JEQ_K, nr, 0, 4), loadArg, ins(BPF.JEQ_K, r.equals, 0, 1));
      p.push(refuse(r.errno), loadNr());
    } else {
      // Each allowed value jumps over the refusal to the reload.
      const n = r.notIn.length;
      p.push(ins(BPF.JEQ_K, nr, 0, n + 3), loadArg);
      r.notIn.forEach((v, i) => p.push(ins(BPF.JEQ_K, v, n - i, 0)));
      p.push(refuse(r.errno), loadNr());
    }
  }
  p.push(ret(SECCOMP_RET.ALLOW));
  return p;
}

/** The program as the kernel takes it: 8 bytes per instruction, in the machine's byte order (little-endian on both). */
export function encodeProgram(program: SockFilter[]): Buffer {
  const b = Buffer.alloc(program.length * 8);
  program.forEach((f, i) => {
    b.writeUInt16LE(f.code, i * 8);
    b.writeUInt8(f.jt, i * 8 + 2);
    b.writeUInt8(f.jf, i * 8 + 3);
    b.writeUInt32LE(f.k >>> 0, i * 8 + 4);
  });
  return b;
}

/** The program bwrap reads for this machine, or null when there is no table for its architecture. */
export function seccompFor(arch: string): Buffer | null {
  if (arch !== "x64" && arch !== "arm64") return null;
  return encodeProgram(seccompProgram(arch));
}
