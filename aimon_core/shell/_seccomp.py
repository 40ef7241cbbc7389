"""The sandbox's seccomp filter: no new Unix sockets, no io_uring, as a classic BPF program.

A read-only bind mount does not stop `connect()` on a Unix socket inside it (the kernel checks
write permission on the socket's inode, and a mount's read-only flag does not count for
sockets), so a sandboxed command could reach the Docker daemon, an SSH agent, the session bus
or a terminal multiplexer by path. The filter refuses `socket(AF_UNIX, ...)` with EPERM (a
socketpair, which connects only to itself, still works: Python's asyncio, Node and most
runtimes use one). io_uring can create sockets without `socket()`, so its calls are refused
too, and so are the kernel keyring's (`add_key`, `request_key`, `keyctl`): the session keyring
is shared with aimon and may hold credentials. bubblewrap loads the program (`--seccomp FD`)
just before it runs the command.

Programs of another architecture than the machine's (x32, or i386 on x86-64) are stopped,
except i386 on x86-64, whose `socket` is filtered like the native one and whose `socketcall`
multiplexer (its domain hides behind a pointer) is refused.
"""

from __future__ import annotations

import errno
import platform
import struct
from dataclasses import dataclass

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
_NR, _ARCH, _ARG0 = 0, 4, 16
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ, _JGE = 0x15, 0x35  # BPF_JMP | BPF_JEQ / BPF_JGE | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF_0000
_KILL_PROCESS = 0x8000_0000
_EPERM = 0x0005_0000 | errno.EPERM
_AF_UNIX = 1
_X32_BIT = 0x4000_0000
_IO_URING = (425, 426, 427)  # io_uring_setup, io_uring_enter, io_uring_register (all arches)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Arch:
    audit: int
    socket: int
    keyring: tuple[int, int, int]  # add_key, request_key, keyctl
    socketcall: int | None = None
    x32: bool = False


_X86_64 = _Arch(audit=0xC000_003E, socket=41, keyring=(248, 249, 250), x32=True)
_I386 = _Arch(audit=0x4000_0003, socket=359, keyring=(286, 287, 288), socketcall=102)
_AARCH64 = _Arch(audit=0xC000_00B7, socket=198, keyring=(217, 218, 219))
_NATIVE = {"x86_64": (_X86_64, _I386), "amd64": (_X86_64, _I386), "aarch64": (_AARCH64,),
           "arm64": (_AARCH64,)}


class SeccompUnsupportedError(RuntimeError):
    """No filter is known for this machine's architecture."""


def _block(arch: _Arch, unix_sockets: bool) -> list[tuple[int, int, int, int]]:
    """Return the instructions that judge one architecture's call (its number already loaded).

    BPF jumps go forward only: `jt`/`jf` skip that many instructions. The block ends in returns.
    """
    checks: list[tuple[int, int]] = []  # (jump code, k) whose true branch refuses the call
    if arch.x32:
        checks.append((_JGE, _X32_BIT))
    if arch.socketcall is not None:
        checks.append((_JEQ, arch.socketcall))
    checks.extend((_JEQ, number) for number in (*_IO_URING, *arch.keyring))
    # Layout: the socket test, the refusing tests, ALLOW, [unix: LD arg0, JEQ, ALLOW], EPERM.
    count = len(checks)
    # To `unix`, past the checks and their ALLOW; with Unix sockets allowed, a test that never
    # jumps keeps the layout (and so every offset) the same.
    out = [(_JEQ, 0 if unix_sockets else count + 1, 0, arch.socket)]
    for index, (code, k) in enumerate(checks):
        out.append((code, count - index + 3, 0, k))  # to EPERM, past ALLOW and `unix`
    out.append((_RET, 0, 0, _ALLOW))
    out.append((_LD_W_ABS, 0, 0, _ARG0))
    out.append((_JEQ, 1, 0, _AF_UNIX))
    out.append((_RET, 0, 0, _ALLOW))
    out.append((_RET, 0, 0, _EPERM))
    return out


def filter_program(machine: str | None = None, *, unix_sockets: bool = False) -> bytes:
    """Return the compiled filter for `machine` (default: this one) as bubblewrap reads it.

    `unix_sockets` (`sandbox.network.allowAllUnixSockets`) lets `socket(AF_UNIX)` through.

    Raises SeccompUnsupportedError for an architecture it has no table for.
    """
    arches = _NATIVE.get((machine or platform.machine()).lower())
    if arches is None:
        raise SeccompUnsupportedError(f"no seccomp filter for {machine or platform.machine()}")
    program: list[tuple[int, int, int, int]] = [(_LD_W_ABS, 0, 0, _ARCH)]
    blocks = [_block(arch, unix_sockets) for arch in arches]
    # Each architecture: `jeq AUDIT` falls into its block; a miss jumps past it.
    for arch, block in zip(arches, blocks, strict=True):
        program.append((_JEQ, 0, len(block) + 1, arch.audit))
        program.append((_LD_W_ABS, 0, 0, _NR))
        program.extend(block)
    program.append((_RET, 0, 0, _KILL_PROCESS))
    return b"".join(struct.pack("=HBBI", code, jt, jf, k) for code, jt, jf, k in program)
