//! `pullpath-stage`: the first stage of a probe pod that starts from an image the node already
//! holds (its pause image, or the image of a DaemonSet running there: none of that image's code
//! runs). `pullpath fleet` delivers it uncompressed and pullpath's own static binary
//! zlib-compressed in parts, all through the API (ConfigMaps mounted read-only, docs/fleet.md).
//! It joins the parts in the order given, inflates them (Adler-32 rejects a damaged part), checks
//! the size and the SHA-256 digest its arguments pin, writes the binary into the pod's in-memory
//! volume and `execve`s it with the rest of its arguments and an empty environment.
//!
//! ```text
//! pullpath-stage OUT SIZE SHA256 PART… -- ARGS…
//! ```
//!
//! Pinned end to end (deploy/admission-policy.yaml, docs/security.md): the admission policy
//! admits this stage's ConfigMap only with these exact bytes, and a delivered pod only with the
//! release's SHA256 as its argument, so the fleet role can write the parts but cannot make them
//! run anything but the release. The environment is empty because a node-held image's own
//! configuration (its `Env`) is not the administrator's to pin: a proxy or trust variable set by
//! an image must not steer the probe.
//!
//! Built by build.rs with rustc alone (no std, no C library, `panic=abort`) and embedded into
//! pullpath. Not part of pullpath's crate, so its `unsafe` (the system calls) is here and only
//! here (`sys.rs`).

#![no_std]
#![no_main]

#[path = "inflate.rs"]
mod inflate;
#[path = "sha256.rs"]
mod sha256;
#[path = "sys.rs"]
mod sys;

fn say(parts: &[&[u8]]) {
    for part in parts {
        sys::write(2, part);
    }
}

fn fail(what: &[u8], detail: &[u8]) -> ! {
    say(&[b"pullpath-stage: ", what, detail, b"\n"]);
    sys::exit(70)
}

const USAGE: &[u8] = b"usage: pullpath-stage OUT SIZE SHA256 PART... -- ARGS...";

/// core is built to unwind and names this; with `panic=abort` nothing ever calls it.
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    fail(b"internal error", b"")
}

fn buffer(len: usize) -> &'static mut [u8] {
    sys::allocate(len).unwrap_or_else(|| fail(b"out of memory", b""))
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
fn read_parts(parts: &[*const u8]) -> &'static [u8] {
    let mut sizes = [0usize; 256];
    if parts.len() > sizes.len() {
        fail(b"too many parts", b"");
    }
    let mut total = 0usize;
    for (i, &path) in parts.iter().enumerate() {
        let name = sys::c_str(path);
        let fd = sys::open(path, sys::O_RDONLY | sys::O_CLOEXEC, 0);
        if fd < 0 {
            fail(b"cannot open ", name);
        }
        let len = sys::lseek(fd, 0, sys::SEEK_END);
        sys::close(fd);
        sizes[i] = usize::try_from(len).unwrap_or_else(|_| fail(b"cannot size ", name));
        total = total
            .checked_add(sizes[i])
            .unwrap_or_else(|| fail(b"the parts are too large", b""));
    }
    let all = buffer(total);
    let mut at = 0;
    for (i, &path) in parts.iter().enumerate() {
        let name = sys::c_str(path);
        let fd = sys::open(path, sys::O_RDONLY | sys::O_CLOEXEC, 0);
        let end = at + sizes[i];
        if fd < 0 || sys::lseek(fd, 0, sys::SEEK_SET) != 0 {
            fail(b"cannot open ", name);
        }
        while at < end {
            let n = sys::read(fd, &mut all[at..end]);
            if n <= 0 {
                fail(b"cannot read ", name);
            }
            at += n as usize;
        }
        sys::close(fd);
    }
    all
}

/// Where `_start` (sys.rs) hands over: `stack` is the kernel's initial stack, argc first.
pub extern "C" fn start(stack: *const usize) -> ! {
    // SAFETY: the kernel's initial stack holds argc, then argc argument pointers and a NULL.
    let (argc, args) = unsafe {
        let argc = *stack;
        let argv = stack.add(1).cast::<*const u8>();
        (argc, core::slice::from_raw_parts(argv, argc + 1))
    };
    let arg = |i: usize| sys::c_str(args[i]);
    let Some(dashes) = (1..argc).find(|&i| arg(i) == b"--") else {
        fail(USAGE, b"");
    };
    if dashes < 5 {
        fail(USAGE, b"");
    }
    let size = parse_size(arg(2)).unwrap_or_else(|| fail(b"SIZE is not a number: ", arg(2)));
    let pinned = arg(3);
    if pinned.len() != 64 {
        fail(b"SHA256 is not 64 hex digits: ", pinned);
    }
    let compressed = read_parts(&args[4..dashes]);
    let binary = buffer(size);
    match inflate::zlib(compressed, binary) {
        Ok(n) if n == size => {}
        Ok(_) => fail(b"the delivered binary is shorter than SIZE", b""),
        Err(inflate::Error::Checksum) => fail(b"a delivered part is damaged (Adler-32)", b""),
        Err(inflate::Error::TooLong) => fail(b"the delivered binary is longer than SIZE", b""),
        Err(_) => fail(
            b"the delivered parts are not one zlib stream (a part missing or out of order)",
            b"",
        ),
    }
    if !sha256::matches_hex(&sha256::digest(binary), pinned) {
        fail(b"the delivered binary is not the one pinned: its SHA-256 is not ", pinned);
    }
    let out = args[1];
    let fd = sys::open(
        out,
        sys::O_WRONLY | sys::O_CREAT | sys::O_EXCL | sys::O_CLOEXEC,
        0o755,
    );
    if fd < 0 {
        fail(b"cannot create ", arg(1));
    }
    let mut at = 0;
    while at < size {
        let n = sys::write(fd, &binary[at..]);
        if n <= 0 {
            fail(b"cannot write ", arg(1));
        }
        at += n as usize;
    }
    // Closed before exec: a file open for writing cannot be executed (ETXTBSY).
    sys::close(fd);
    // argv for the probe: OUT, then everything after `--`, NULL-terminated (args[argc] is NULL).
    let probe_argv = &args[dashes..];
    let mut argv = [core::ptr::null::<u8>(); 512];
    if probe_argv.len() > argv.len() {
        fail(b"too many arguments", b"");
    }
    argv[..probe_argv.len()].copy_from_slice(probe_argv);
    argv[0] = out;
    let no_environment = [core::ptr::null::<u8>()];
    sys::execve(out, argv.as_ptr(), no_environment.as_ptr());
    fail(b"cannot execute ", arg(1))
}
