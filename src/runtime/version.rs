//! Which containerd the node runs, and the registry-host rules that follow from it.
//!
//! containerd's pull is the same sequence in 1.6, 1.7 and 2.x, but how it builds its hosts
//! from `hosts.toml` is not (`remotes/docker/config/hosts.go`, read at v1.6.20, v1.7.24 and
//! v2.1.0):
//!
//! - a `hosts.toml` without a `[host]` table: 1.6 and 1.7 fail to decode it (`getSortedHosts`:
//!   "invalid `host` tree"), log "failed to decode hosts.toml" and use only the directory's
//!   `*.crt` files; 2.x parses it, so its `server` and top-level settings apply;
//! - an `http://` host that has TLS settings (`ca`, `client`, `skip_verify`) on a port other
//!   than 80: 1.7 and 2.x try HTTPS first and fall back to plain HTTP when the server answers
//!   the handshake with HTTP or the handshake times out (`docker.NewHTTPFallback`); 1.6 speaks
//!   plain HTTP;
//! - a localhost registry without configuration: 1.6 speaks plain HTTP (without verification);
//!   1.7 and 2.x use HTTPS without verification for no port or 443, plain HTTP for port 80, and
//!   otherwise HTTPS first with the fallback above. The lab confirms the last through CRI with a
//!   `config_path` on 1.6.20, 1.7.24 and 2.1.9: all three pull from a plain-HTTP registry on
//!   127.0.0.1:5000 (`tests/lab_probe.rs`).
//!
//! When the runtime cannot be asked, a failure found under the assumed line where the lines
//! differ is undecided ([`RuntimeIdentity::settle`]).

use crate::verdict::{Candidate, Undecided, Verdict};

/// The release lines whose registry-host rules differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ContainerdLine {
    V1_6,
    V1_7,
    V2,
}

impl ContainerdLine {
    /// Every line, oldest first.
    pub const ALL: [ContainerdLine; 3] = [
        ContainerdLine::V1_6,
        ContainerdLine::V1_7,
        ContainerdLine::V2,
    ];

    /// The line of a version string as containerd reports it over CRI (`v1.7.24`) or as a
    /// distribution packages it (`1.6.20~ds1`, `2.1.9+ds1`). Versions before 1.6 follow 1.6's
    /// rules (the hosts.toml code did not change between 1.5 and 1.6); later majors follow 2.x.
    pub fn of_version(version: &str) -> Option<ContainerdLine> {
        let digits = version.trim().trim_start_matches('v');
        let mut parts = digits.split(|c: char| !c.is_ascii_digit());
        let major: u32 = parts.next()?.parse().ok()?;
        let minor: u32 = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
        Some(match (major, minor) {
            (0, _) => return None,
            (1, ..=6) => ContainerdLine::V1_6,
            (1, _) => ContainerdLine::V1_7,
            _ => ContainerdLine::V2,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ContainerdLine::V1_6 => "1.6",
            ContainerdLine::V1_7 => "1.7",
            ContainerdLine::V2 => "2.x",
        }
    }

    /// Whether a `hosts.toml` without a `[host]` table is read (else only its `*.crt` count).
    pub fn reads_hosts_without_host_table(self) -> bool {
        self >= ContainerdLine::V2
    }

    /// Whether an `http://` host with TLS settings is tried over HTTPS first.
    pub fn tries_https_first(self) -> bool {
        self >= ContainerdLine::V1_7
    }
}

/// The runtime the probe follows, and how it knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeIdentity {
    /// `containerd`, as the runtime names itself; `None` when it was not asked.
    pub name: Option<String>,
    /// Its version as reported (`v1.7.24`).
    pub version: Option<String>,
    pub source: VersionSource,
    /// The rules followed where versions differ.
    pub line: ContainerdLine,
}

/// Where the runtime's version came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionSource {
    /// The runtime answered CRI `Version` on this socket.
    Cri(String),
    /// `--containerd-version`.
    Flag,
    /// Not known: why, and the rules assumed instead.
    Unknown(String),
}

impl RuntimeIdentity {
    /// A failure found under assumed rules where containerd's lines read the registry's hosts
    /// differently (`version_dependent`) is not the node's answer: its line may not fail there.
    /// The verdict is then undecided, leaning to the failure, and names what decides. A pass
    /// or a failure under the runtime's own rules stands.
    pub fn settle(&self, verdict: Verdict, version_dependent: bool) -> Verdict {
        let (VersionSource::Unknown(why), true) = (&self.source, version_dependent) else {
            return verdict;
        };
        let Verdict::Failed(failure) = verdict else {
            return verdict;
        };
        let layer = failure.fault.layer();
        Verdict::Undecided(Undecided {
            leaning: Some(failure.fault),
            seen: failure.seen,
            candidates: vec![Candidate {
                layer,
                why: format!(
                    "under containerd {} rules (assumed: {why}); the other lines read this registry's hosts otherwise (see the warnings) and may not fail here",
                    self.line.as_str()
                ),
            }],
            decides: Some(
                "the node's containerd version: run the probe where it can ask the runtime (--runtime-endpoint) or name it (--containerd-version)".to_string(),
            ),
        })
    }
}

/// The line assumed when the runtime cannot be asked: 1.7, what most managed node images ran
/// when this was written; the report says it was assumed.
pub const ASSUMED_LINE: ContainerdLine = ContainerdLine::V1_7;

impl RuntimeIdentity {
    /// From a CRI `Version` answer on `socket`.
    pub fn from_cri(socket: &str, name: &str, version: &str) -> RuntimeIdentity {
        let containerd = name.eq_ignore_ascii_case("containerd");
        match ContainerdLine::of_version(version).filter(|_| containerd) {
            Some(line) => RuntimeIdentity {
                name: Some(name.to_string()),
                version: Some(version.to_string()),
                source: VersionSource::Cri(socket.to_string()),
                line,
            },
            None => RuntimeIdentity {
                name: Some(name.to_string()),
                version: Some(version.to_string()),
                source: VersionSource::Unknown(format!(
                    "the runtime on {socket} is {name} {version}, not a containerd whose rules pullpath knows; containerd {} rules assumed",
                    ASSUMED_LINE.as_str()
                )),
                line: ASSUMED_LINE,
            },
        }
    }

    /// From `--containerd-version`.
    pub fn from_flag(version: &str) -> Result<RuntimeIdentity, NotAVersion> {
        let line =
            ContainerdLine::of_version(version).ok_or_else(|| NotAVersion(version.to_string()))?;
        Ok(RuntimeIdentity {
            name: Some("containerd".into()),
            version: Some(version.to_string()),
            source: VersionSource::Flag,
            line,
        })
    }

    /// The runtime could not be asked.
    pub fn unknown(why: &str) -> RuntimeIdentity {
        RuntimeIdentity {
            name: None,
            version: None,
            source: VersionSource::Unknown(format!(
                "{why}: containerd {} rules assumed where versions differ",
                ASSUMED_LINE.as_str()
            )),
            line: ASSUMED_LINE,
        }
    }
}

/// A `--containerd-version` that names no containerd version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a containerd version (e.g. 1.7.24)")]
pub struct NotAVersion(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_from_reported_and_packaged_versions() {
        assert_eq!(
            ContainerdLine::of_version("v1.6.20"),
            Some(ContainerdLine::V1_6)
        );
        assert_eq!(
            ContainerdLine::of_version("1.6.20~ds1"),
            Some(ContainerdLine::V1_6)
        );
        assert_eq!(
            ContainerdLine::of_version("1.5.9"),
            Some(ContainerdLine::V1_6)
        );
        assert_eq!(
            ContainerdLine::of_version("v1.7.24"),
            Some(ContainerdLine::V1_7)
        );
        assert_eq!(
            ContainerdLine::of_version("1.7.24~ds1-6+deb13u1"),
            Some(ContainerdLine::V1_7)
        );
        assert_eq!(
            ContainerdLine::of_version("v2.1.9"),
            Some(ContainerdLine::V2)
        );
        assert_eq!(
            ContainerdLine::of_version("2.1.9+ds1"),
            Some(ContainerdLine::V2)
        );
        assert_eq!(
            ContainerdLine::of_version("3.0.0"),
            Some(ContainerdLine::V2)
        );
        assert_eq!(ContainerdLine::of_version(""), None);
        assert_eq!(ContainerdLine::of_version("latest"), None);
        assert_eq!(ContainerdLine::of_version("0.2"), None);
    }

    #[test]
    fn rules_per_line() {
        assert!(!ContainerdLine::V1_6.reads_hosts_without_host_table());
        assert!(!ContainerdLine::V1_7.reads_hosts_without_host_table());
        assert!(ContainerdLine::V2.reads_hosts_without_host_table());
        assert!(!ContainerdLine::V1_6.tries_https_first());
        assert!(ContainerdLine::V1_7.tries_https_first());
        assert!(ContainerdLine::V2.tries_https_first());
    }

    #[test]
    fn identity_from_cri_knows_only_containerd() {
        let ours =
            RuntimeIdentity::from_cri("/run/containerd/containerd.sock", "containerd", "v2.1.9");
        assert_eq!(ours.line, ContainerdLine::V2);
        assert_eq!(
            ours.source,
            VersionSource::Cri("/run/containerd/containerd.sock".into())
        );
        let crio = RuntimeIdentity::from_cri("/run/crio/crio.sock", "cri-o", "1.31.0");
        assert_eq!(crio.line, ASSUMED_LINE);
        assert!(
            matches!(&crio.source, VersionSource::Unknown(why) if why.contains("cri-o 1.31.0"))
        );
        assert_eq!(
            RuntimeIdentity::from_flag("nonsense"),
            Err(NotAVersion("nonsense".into()))
        );
        assert_eq!(
            RuntimeIdentity::from_flag("1.6.20")
                .expect("a version")
                .line,
            ContainerdLine::V1_6
        );
        let unknown = RuntimeIdentity::unknown("no CRI socket at /run/containerd/containerd.sock");
        assert_eq!((unknown.name, unknown.line), (None, ASSUMED_LINE));
        assert!(
            matches!(&unknown.source, VersionSource::Unknown(why) if why.contains("no CRI socket"))
        );
    }
}

#[cfg(test)]
mod settle_tests {
    use super::*;
    use crate::verdict::{Failure, Fault, Seen};
    use crate::vocab::{Layer, Owner};

    fn refused() -> Verdict {
        Verdict::Failed(Failure {
            fault: Fault::new(Layer::Refused, None, Owner::NetworkTeam),
            seen: Seen {
                host: Some("127.0.0.1:443".into()),
                ..Seen::default()
            },
        })
    }

    #[test]
    fn a_failure_under_assumed_rules_where_lines_differ_is_undecided() {
        let assumed = RuntimeIdentity::unknown("no CRI socket");
        let Verdict::Undecided(undecided) = assumed.settle(refused(), true) else {
            panic!("undecided");
        };
        assert_eq!(undecided.leaning.map(|f| f.layer()), Some(Layer::Refused));
        assert_eq!(undecided.seen.host.as_deref(), Some("127.0.0.1:443"));
        assert!(undecided.candidates[0].why.contains("assumed"));
        assert!(
            undecided
                .decides
                .as_deref()
                .is_some_and(|d| d.contains("--containerd-version"))
        );
        // Where the lines agree, or the line is known, or it passed: the verdict stands.
        assert_eq!(assumed.settle(refused(), false), refused());
        assert_eq!(assumed.settle(Verdict::Passed, true), Verdict::Passed);
        let asked =
            RuntimeIdentity::from_cri("/run/containerd/containerd.sock", "containerd", "v1.7.24");
        assert_eq!(asked.settle(refused(), true), refused());
    }
}
