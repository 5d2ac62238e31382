//! Why a pullpath binary cannot be delivered to a node, as a value: the run names it for each
//! node of that architecture (`RunProblem::NoProbeBinary`), with how to give one.

use std::fmt;

/// The most data one ConfigMap may hold (`core.MaxSecretSize`, summed over data and binaryData).
pub const CONFIGMAP_LIMIT: usize = 1 << 20;

/// What is wrong with a file offered as an ELF executable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElfProblem {
    NotElf,
    UnknownClass,
    UnknownByteOrder,
    /// A header field or program header lies past the end of the file.
    Truncated,
}

impl fmt::Display for ElfProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ElfProblem::NotElf => "not an ELF file",
            ElfProblem::UnknownClass => "an ELF file of unknown class",
            ElfProblem::UnknownByteOrder => "an ELF file of unknown byte order",
            ElfProblem::Truncated => "a truncated ELF header",
        })
    }
}

/// Why no binary can be delivered for an architecture. `shown` names the file as the user gave
/// it (`--probe-binary amd64=/path`, or `this pullpath (/path)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undeliverable {
    /// The node names no architecture, so no binary can be chosen for it.
    UnknownArch,
    /// This executable's own path could not be found.
    NoOwnPath {
        error: String,
    },
    Unreadable {
        shown: String,
        error: String,
    },
    NotExecutable {
        shown: String,
        problem: ElfProblem,
    },
    /// Built for another architecture (`None`: one pullpath has no name for).
    OtherArch {
        shown: String,
        built_for: Option<&'static str>,
        wanted: String,
    },
    /// It names a program interpreter: a pause image has no loader or C library.
    Dynamic {
        shown: String,
    },
    /// No first stage behind build.rs's marker.
    NoStage {
        shown: String,
    },
    /// The first stage is larger than one ConfigMap holds.
    StageTooLarge {
        arch: String,
        bytes: usize,
    },
}

impl Undeliverable {
    /// Whether giving another file with `--probe-binary` is the way out (every case but a
    /// stage too large, which a build fixes).
    fn wants_another_binary(&self) -> bool {
        !matches!(
            self,
            Undeliverable::StageTooLarge { .. } | Undeliverable::UnknownArch
        )
    }
}

impl fmt::Display for Undeliverable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Undeliverable::UnknownArch => f.write_str(
                "the node names none (kubernetes.io/arch, status.nodeInfo.architecture)",
            )?,
            Undeliverable::NoOwnPath { error } => {
                write!(f, "cannot find this executable: {error}")?
            }
            Undeliverable::Unreadable { shown, error } => {
                write!(f, "cannot read {shown}: {error}")?
            }
            Undeliverable::NotExecutable { shown, problem } => write!(f, "{shown} is {problem}")?,
            Undeliverable::OtherArch {
                shown,
                built_for,
                wanted,
            } => write!(
                f,
                "{shown} is built for {}, not {wanted}",
                built_for.unwrap_or("another architecture")
            )?,
            Undeliverable::Dynamic { shown } => write!(
                f,
                "{shown} is dynamically linked, and a node's pause image has no loader or C library: build a static pullpath (RUSTFLAGS=\"-C target-feature=+crt-static\", as scripts/release.sh does)"
            )?,
            Undeliverable::NoStage { shown } => write!(
                f,
                "{shown} carries no first stage (pullpath-stage): its build could not make one (see build.rs)"
            )?,
            Undeliverable::StageTooLarge { arch, bytes } => write!(
                f,
                "the first stage for {arch} is {bytes} bytes, more than a ConfigMap holds ({}): build it with the release profile (scripts/release.sh)",
                CONFIGMAP_LIMIT
            )?,
        }
        Ok(())
    }
}

/// The problem and, where another file is the fix, how to give it.
pub struct WithFix<'a> {
    pub arch: &'a str,
    pub problem: &'a Undeliverable,
}

impl fmt::Display for WithFix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.problem)?;
        if self.problem.wants_another_binary() {
            write!(
                f,
                "; pass --probe-binary {arch}=PATH (a static pullpath for {arch}: scripts/release.sh), or --probe-image",
                arch = self.arch
            )?;
        }
        Ok(())
    }
}
