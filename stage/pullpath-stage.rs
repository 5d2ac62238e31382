//! `pullpath-stage`: the first stage of a probe pod that starts from an image the node already
//! holds (its pause image: one static `/pause`, no shell, no loader, nothing to inflate with).
//! `pullpath fleet` delivers it uncompressed and pullpath's own static binary zlib-compressed in
//! parts, all through the API (ConfigMaps mounted read-only, docs/fleet.md). It joins the parts
//! in the order given, inflates them (Adler-32 rejects a damaged part), checks the size, writes
//! the binary into the pod's in-memory volume and `execve`s it with the rest of its arguments.
//!
//! ```text
//! pullpath-stage OUT SIZE PART… -- ARGS…
//! ```
//!
//! Built by build.rs with rustc alone (no std, `panic=abort`, the C library linked statically)
//! and embedded into pullpath: a std program linked statically is over a ConfigMap's 1 MiB.
//! Not part of pullpath's crate, so its `unsafe` (the C calls) is here and only here.

#![no_std]
#![no_main]

#[path = "inflate.rs"]
mod inflate;

use core::ffi::{CStr, c_char, c_int, c_void};

unsafe extern "C" {
    fn open(path: *const c_char, flags: c_int, ...) -> c_int;
    fn read(fd: c_int, buf: *mut c_void, count: usize) -> isize;
    fn write(fd: c_int, buf: *const c_void, count: usize) -> isize;
    fn close(fd: c_int) -> c_int;
    fn lseek(fd: c_int, offset: i64, whence: c_int) -> i64;
    fn malloc(size: usize) -> *mut c_void;
    fn execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char)
    -> c_int;
    fn exit(status: c_int) -> !;
    static environ: *const *const c_char;
}

// Linux's values, the same on every architecture pullpath is built for.
const O_RDONLY: c_int = 0;
const O_WRONLY: c_int = 1;
const O_CREAT: c_int = 0o100;
const O_EXCL: c_int = 0o200;
const O_CLOEXEC: c_int = 0o2000000;
const SEEK_SET: c_int = 0;
const SEEK_END: c_int = 2;

fn say(parts: &[&[u8]]) {
    for part in parts {
        // SAFETY: a valid slice of `part.len()` bytes.
        unsafe { write(2, part.as_ptr().cast(), part.len()) };
    }
}

fn fail(what: &[u8], detail: &[u8]) -> ! {
    say(&[b"pullpath-stage: ", what, detail, b"\n"]);
    // SAFETY: ends the process.
    unsafe { exit(70) }
}

/// core is built to unwind and names this; with `panic=abort` nothing ever calls it.
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    fail(b"internal error", b"")
}

/// A fresh buffer of `len` bytes from the C library (never freed: the process execs away).
fn buffer(len: usize) -> &'static mut [u8] {
    // SAFETY: malloc's memory is ours for `len` bytes; zero-filled before the slice is made.
    unsafe {
        let p = malloc(len.max(1)).cast::<u8>();
        if p.is_null() {
            fail(b"out of memory", b"");
        }
        core::ptr::write_bytes(p, 0, len);
        core::slice::from_raw_parts_mut(p, len)
    }
}

fn parse_size(text: &[u8]) -> Option<usize> {
    if text.is_empty() {
        return None;
    }
    text.iter().try_fold(0usize, |n, &d| {
        d.is_ascii_digit()
            .then(|| n.checked_mul(10)?.checked_add(usize::from(d - b'0')))?
    })
}

/// Read every part into one buffer, in order.
fn read_parts(parts: &[*const c_char]) -> &'static [u8] {
    let mut sizes = [0usize; 256];
    if parts.len() > sizes.len() {
        fail(b"too many parts", b"");
    }
    let mut total = 0usize;
    for (i, &path) in parts.iter().enumerate() {
        // SAFETY: argv strings are NUL-terminated.
        let name = unsafe { CStr::from_ptr(path) }.to_bytes();
        // SAFETY: a NUL-terminated path.
        let fd = unsafe { open(path, O_RDONLY | O_CLOEXEC) };
        if fd < 0 {
            fail(b"cannot open ", name);
        }
        // SAFETY: an open descriptor.
        let len = unsafe { lseek(fd, 0, SEEK_END) };
        // SAFETY: as above.
        unsafe { close(fd) };
        sizes[i] = usize::try_from(len).unwrap_or_else(|_| fail(b"cannot size ", name));
        total += sizes[i];
    }
    let all = buffer(total);
    let mut at = 0;
    for (i, &path) in parts.iter().enumerate() {
        // SAFETY: argv strings are NUL-terminated.
        let name = unsafe { CStr::from_ptr(path) }.to_bytes();
        // SAFETY: a NUL-terminated path.
        let fd = unsafe { open(path, O_RDONLY | O_CLOEXEC) };
        let end = at + sizes[i];
        // SAFETY: an open descriptor.
        if fd < 0 || unsafe { lseek(fd, 0, SEEK_SET) } != 0 {
            fail(b"cannot open ", name);
        }
        while at < end {
            // SAFETY: reads into the unfilled rest of this part's span of `all`.
            let n = unsafe { read(fd, all[at..end].as_mut_ptr().cast(), end - at) };
            if n <= 0 {
                fail(b"cannot read ", name);
            }
            at += n as usize;
        }
        // SAFETY: an open descriptor.
        unsafe { close(fd) };
    }
    all
}

/// The C entry point: `argv` as the kernel gave it.
#[unsafe(no_mangle)]
pub extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    // SAFETY: the C runtime passes `argc` valid pointers, NULL-terminated.
    let args = unsafe { core::slice::from_raw_parts(argv, argc as usize + 1) };
    let arg = |i: usize| -> &[u8] {
        // SAFETY: `i` < argc.
        unsafe { CStr::from_ptr(args[i]) }.to_bytes()
    };
    let argc = argc as usize;
    let Some(dashes) = (1..argc).find(|&i| arg(i) == b"--") else {
        fail(b"usage: pullpath-stage OUT SIZE PART... -- ARGS...", b"");
    };
    if dashes < 4 {
        fail(b"usage: pullpath-stage OUT SIZE PART... -- ARGS...", b"");
    }
    let size = parse_size(arg(2)).unwrap_or_else(|| fail(b"SIZE is not a number: ", arg(2)));
    let compressed = read_parts(&args[3..dashes]);
    let binary = buffer(size);
    match inflate::zlib(compressed, binary) {
        Ok(n) if n == size => {}
        Ok(_) => fail(b"the delivered binary is shorter than SIZE", b""),
        Err(inflate::Error::Checksum) => fail(b"a delivered part is damaged (Adler-32)", b""),
        Err(inflate::Error::TooLong) => fail(b"the delivered binary is longer than SIZE", b""),
        Err(_) => fail(b"the delivered parts are not one zlib stream (a part missing or out of order)", b""),
    }
    let out = args[1];
    // SAFETY: a NUL-terminated path; the mode is the variadic third argument.
    let fd = unsafe { open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755 as c_int) };
    if fd < 0 {
        fail(b"cannot create ", arg(1));
    }
    let mut at = 0;
    while at < size {
        // SAFETY: writes from the inflated binary.
        let n = unsafe { write(fd, binary[at..].as_ptr().cast(), size - at) };
        if n <= 0 {
            fail(b"cannot write ", arg(1));
        }
        at += n as usize;
    }
    // Closed before exec: a file open for writing cannot be executed (ETXTBSY).
    // SAFETY: an open descriptor.
    unsafe { close(fd) };
    // argv for the probe: OUT, then everything after `--`, NULL-terminated (args[argc] is NULL).
    let probe_argv = &args[dashes..];
    let mut argv = [core::ptr::null::<c_char>(); 512];
    if probe_argv.len() > argv.len() {
        fail(b"too many arguments", b"");
    }
    argv[..probe_argv.len()].copy_from_slice(probe_argv);
    argv[0] = out;
    // SAFETY: NULL-terminated argv and the process's environment.
    unsafe { execve(out, argv.as_ptr(), environ) };
    fail(b"cannot execute ", arg(1))
}
