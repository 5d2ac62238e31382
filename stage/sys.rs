//! The little of Linux the first stage uses, called directly: no C library, so the stage is a few
//! tens of kilobytes (the statically linked C library was 700 KB of it) and small enough for the
//! admission policy to pin byte for byte (docs/security.md).
//!
//! The entry point `_start` (the kernel's initial stack: argc, argv…, NULL, envp…, NULL, auxv),
//! the system calls by number (Linux's `arch/*/include/uapi/asm/unistd*.h`; arm64 uses the
//! generic table, which has `openat` and no `open`), and the memory functions the compiler may
//! call (`memcpy`, `memmove`, `memset`, `memcmp`, `bcmp`), written with volatile accesses so that
//! the optimizer cannot turn their loops back into calls to themselves.

use core::arch::{asm, global_asm};

#[cfg(target_arch = "x86_64")]
mod number {
    pub const READ: usize = 0;
    pub const WRITE: usize = 1;
    pub const CLOSE: usize = 3;
    pub const LSEEK: usize = 8;
    pub const MMAP: usize = 9;
    pub const EXECVE: usize = 59;
    pub const EXIT_GROUP: usize = 231;
    pub const OPENAT: usize = 257;
}

#[cfg(target_arch = "aarch64")]
mod number {
    pub const OPENAT: usize = 56;
    pub const CLOSE: usize = 57;
    pub const LSEEK: usize = 62;
    pub const READ: usize = 63;
    pub const WRITE: usize = 64;
    pub const EXIT_GROUP: usize = 94;
    pub const EXECVE: usize = 221;
    pub const MMAP: usize = 222;
}

// The kernel starts a static program with the stack pointer at argc; the ABI wants it 16-byte
// aligned at a call. `start` never returns.
#[cfg(target_arch = "x86_64")]
global_asm!(
    ".globl _start",
    "_start:",
    "xor ebp, ebp",
    "mov rdi, rsp",
    "and rsp, -16",
    "call {start}",
    "ud2",
    start = sym crate::start,
);

#[cfg(target_arch = "aarch64")]
global_asm!(
    ".globl _start",
    "_start:",
    "mov x29, #0",
    "mov x30, #0",
    "mov x0, sp",
    "and sp, x0, #-16",
    "bl {start}",
    "brk #0",
    start = sym crate::start,
);

#[cfg(target_arch = "x86_64")]
unsafe fn syscall(n: usize, a: usize, b: usize, c: usize, d: usize, e: usize, f: usize) -> isize {
    let ret: isize;
    // SAFETY: the caller passes arguments valid for system call `n`.
    unsafe {
        asm!("syscall", inlateout("rax") n as isize => ret, in("rdi") a, in("rsi") b,
             in("rdx") c, in("r10") d, in("r8") e, in("r9") f,
             lateout("rcx") _, lateout("r11") _, options(nostack));
    }
    ret
}

#[cfg(target_arch = "aarch64")]
unsafe fn syscall(n: usize, a: usize, b: usize, c: usize, d: usize, e: usize, f: usize) -> isize {
    let ret: isize;
    // SAFETY: the caller passes arguments valid for system call `n`.
    unsafe {
        asm!("svc 0", in("x8") n, inlateout("x0") a as isize => ret, in("x1") b, in("x2") c,
             in("x3") d, in("x4") e, in("x5") f, options(nostack));
    }
    ret
}

pub const O_RDONLY: usize = 0;
pub const O_WRONLY: usize = 1;
pub const O_CREAT: usize = 0o100;
pub const O_EXCL: usize = 0o200;
pub const O_CLOEXEC: usize = 0o2000000;
pub const SEEK_SET: usize = 0;
pub const SEEK_END: usize = 2;
const AT_FDCWD: isize = -100;

/// `openat(AT_FDCWD, path, flags, mode)`; `path` NUL-terminated.
pub fn open(path: *const u8, flags: usize, mode: usize) -> isize {
    // SAFETY: `path` is a NUL-terminated string from argv.
    unsafe { syscall(number::OPENAT, AT_FDCWD as usize, path as usize, flags, mode, 0, 0) }
}

pub fn read(fd: isize, buf: &mut [u8]) -> isize {
    // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
    unsafe { syscall(number::READ, fd as usize, buf.as_mut_ptr() as usize, buf.len(), 0, 0, 0) }
}

pub fn write(fd: isize, buf: &[u8]) -> isize {
    // SAFETY: the kernel reads `buf.len()` bytes of `buf`.
    unsafe { syscall(number::WRITE, fd as usize, buf.as_ptr() as usize, buf.len(), 0, 0, 0) }
}

pub fn close(fd: isize) {
    // SAFETY: closes a descriptor this program opened.
    unsafe { syscall(number::CLOSE, fd as usize, 0, 0, 0, 0, 0) };
}

pub fn lseek(fd: isize, offset: usize, whence: usize) -> isize {
    // SAFETY: no memory is passed.
    unsafe { syscall(number::LSEEK, fd as usize, offset, whence, 0, 0, 0) }
}

/// `len` zeroed bytes of fresh anonymous memory (never freed: the process execs away), or
/// `None`.
pub fn allocate(len: usize) -> Option<&'static mut [u8]> {
    const PROT_READ_WRITE: usize = 0x1 | 0x2;
    const MAP_PRIVATE_ANONYMOUS: usize = 0x02 | 0x20;
    let len = len.max(1);
    // SAFETY: a new private anonymous mapping, no file.
    let at = unsafe {
        syscall(number::MMAP, 0, len, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, usize::MAX, 0)
    };
    // The kernel returns -errno (-4095..-1) on failure.
    if (-4095..0).contains(&at) {
        return None;
    }
    // SAFETY: the mapping is `len` bytes, readable and writable, zero-filled, and ours alone.
    Some(unsafe { core::slice::from_raw_parts_mut(at as *mut u8, len) })
}

/// `execve(path, argv, envp)`; returns only when it failed.
pub fn execve(path: *const u8, argv: *const *const u8, envp: *const *const u8) {
    // SAFETY: NUL-terminated `path`, NULL-terminated `argv` and `envp` of NUL-terminated strings.
    unsafe { syscall(number::EXECVE, path as usize, argv as usize, envp as usize, 0, 0, 0) };
}

pub fn exit(status: usize) -> ! {
    loop {
        // SAFETY: ends the process.
        unsafe { syscall(number::EXIT_GROUP, status, 0, 0, 0, 0, 0) };
    }
}

/// The NUL-terminated string at `s` (read volatile: a plain loop becomes a call to `strlen`).
pub fn c_str(s: *const u8) -> &'static [u8] {
    let mut len = 0;
    // SAFETY: `s` is a NUL-terminated string the kernel placed on the initial stack.
    unsafe {
        while s.add(len).read_volatile() != 0 {
            len += 1;
        }
        core::slice::from_raw_parts(s, len)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcpy(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    for i in 0..n {
        // SAFETY: the caller passes `n` valid bytes at each, not overlapping.
        unsafe { dest.add(i).write_volatile(src.add(i).read_volatile()) };
    }
    dest
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn memmove(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    if (dest as usize) <= (src as usize) {
        for i in 0..n {
            // SAFETY: forwards, each byte read before a later write can reach it.
            unsafe { dest.add(i).write_volatile(src.add(i).read_volatile()) };
        }
    } else {
        for i in (0..n).rev() {
            // SAFETY: backwards, as above.
            unsafe { dest.add(i).write_volatile(src.add(i).read_volatile()) };
        }
    }
    dest
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn memset(dest: *mut u8, value: i32, n: usize) -> *mut u8 {
    for i in 0..n {
        // SAFETY: the caller passes `n` valid bytes.
        unsafe { dest.add(i).write_volatile(value as u8) };
    }
    dest
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    for i in 0..n {
        // SAFETY: the caller passes `n` valid bytes at each.
        let (x, y) = unsafe { (a.add(i).read_volatile(), b.add(i).read_volatile()) };
        if x != y {
            return i32::from(x) - i32::from(y);
        }
    }
    0
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    // SAFETY: as memcmp.
    unsafe { memcmp(a, b, n) }
}
