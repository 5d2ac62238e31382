//! The OCI and Docker image model the walk needs, as pure functions over bytes: the manifest
//! (or index) a registry sent, the node's platform chosen from an index the way containerd's
//! platform matcher chooses, and a blob's bytes checked against its descriptor.

use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use super::observed::body::BodyProblem;
use crate::image_ref::{Digest, hex};

/// What the walk asks for: every manifest and index type containerd accepts.
pub const MANIFEST_TYPES: &str = "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json";

/// An OS/architecture pair, in OCI words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    pub os: String,
    pub architecture: String,
    pub variant: Option<String>,
}

impl Platform {
    /// This machine's platform.
    pub fn host() -> Platform {
        let architecture = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            "x86" => "386",
            "powerpc64" => "ppc64le",
            other => other,
        };
        Platform {
            os: "linux".into(),
            architecture: architecture.into(),
            variant: None,
        }
    }

    /// `os/arch[/variant]`.
    pub fn parse(text: &str) -> Option<Platform> {
        let mut parts = text.split('/');
        let os = parts.next().filter(|s| !s.is_empty())?;
        let architecture = parts.next().filter(|s| !s.is_empty())?;
        let variant = parts.next().map(String::from);
        parts.next().is_none().then(|| Platform {
            os: os.into(),
            architecture: architecture.into(),
            variant,
        })
    }

    fn matches(&self, p: &PlatformJson) -> bool {
        p.os == self.os
            && p.architecture == self.architecture
            && (self.variant.is_none() || p.variant == self.variant)
    }
}

/// `os/arch[/variant]`, for the node's platform and an index entry's alike.
fn write_platform(
    f: &mut std::fmt::Formatter<'_>,
    os: &str,
    architecture: &str,
    variant: Option<&str>,
) -> std::fmt::Result {
    write!(f, "{os}/{architecture}")?;
    match variant {
        Some(v) => write!(f, "/{v}"),
        None => Ok(()),
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write_platform(f, &self.os, &self.architecture, self.variant.as_deref())
    }
}

/// A content descriptor: what a manifest says a blob or child manifest is.
#[derive(Debug, Clone, Deserialize)]
pub struct Descriptor {
    #[serde(rename = "mediaType", default)]
    pub media_type: String,
    #[serde(deserialize_with = "digest")]
    pub digest: Digest,
    pub size: u64,
    #[serde(default)]
    pub platform: Option<PlatformJson>,
}

fn digest<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Digest, D::Error> {
    let text = String::deserialize(d)?;
    Digest::parse(&text).map_err(serde::de::Error::custom)
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PlatformJson {
    #[serde(default)]
    pub os: String,
    #[serde(default)]
    pub architecture: String,
    #[serde(default)]
    pub variant: Option<String>,
}

impl std::fmt::Display for PlatformJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write_platform(f, &self.os, &self.architecture, self.variant.as_deref())
    }
}

/// A manifest as the walk uses it.
#[derive(Debug, Clone)]
pub enum Manifest {
    /// An index (manifest list): one child manifest per platform.
    Index(Vec<Descriptor>),
    /// An image manifest: its config and layers.
    Image {
        config: Descriptor,
        layers: Vec<Descriptor>,
    },
}

/// A manifest read from a registry, with what the path shows of it.
#[derive(Debug, Clone)]
pub struct ReadManifest {
    pub manifest: Manifest,
    pub digest: Digest,
    /// One line for the path: type, digest, platforms or layers.
    pub summary: String,
}

/// Why a manifest the registry sent cannot be used, with what was seen. Carried as
/// `Evidence::Manifest`; `Display` is the cause the report has always given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestProblem {
    /// Asked for by digest, the bytes hash to another (containerd checks the same).
    #[error("manifest digest mismatch: asked for {asked}, the bytes hash to {got}")]
    Digest { asked: Digest, got: Digest },
    /// serde_json's words: `Evidence` is `Clone + Eq`, which `serde_json::Error` is not.
    #[error("the manifest is not valid JSON: {error}")]
    NotJson { error: String },
    #[error("a Docker schema 1 manifest: containerd no longer pulls these")]
    Schema1,
    #[error("{media} {digest} has neither manifests nor config")]
    Empty { media: String, digest: Digest },
    /// The entry chosen from an index is an index again.
    #[error("the platform's entry is itself an index")]
    NestedIndex,
    /// No entry of an index for the node's platform; `offered` leaves out attestations.
    #[error(
        "no manifest for {wanted} in the index; it offers {}",
        offered_words(offered)
    )]
    NoPlatform {
        wanted: Platform,
        offered: Vec<PlatformJson>,
    },
}

fn offered_words(offered: &[PlatformJson]) -> String {
    if offered.is_empty() {
        return "no platform".to_string();
    }
    let each: Vec<String> = offered.iter().map(ToString::to_string).collect();
    each.join(", ")
}

#[derive(Deserialize)]
struct ManifestJson {
    #[serde(rename = "mediaType", default)]
    media_type: String,
    #[serde(rename = "schemaVersion", default)]
    schema_version: Option<u64>,
    #[serde(default)]
    manifests: Option<Vec<Descriptor>>,
    #[serde(default)]
    config: Option<Descriptor>,
    #[serde(default)]
    layers: Vec<Descriptor>,
}

/// A manifest body → the manifest. `asked` is the digest when it was asked for by digest:
/// then the bytes must hash to it, as containerd checks.
pub fn interpret_manifest(
    body: &[u8],
    asked: Option<&Digest>,
    content_type: &str,
) -> Result<ReadManifest, ManifestProblem> {
    let digest = sha256_digest(body);
    if let Some(asked) = asked
        && *asked != digest
    {
        return Err(ManifestProblem::Digest {
            asked: asked.clone(),
            got: digest,
        });
    }
    let json: ManifestJson =
        serde_json::from_slice(body).map_err(|e| ManifestProblem::NotJson {
            error: e.to_string(),
        })?;
    if json.schema_version == Some(1) {
        return Err(ManifestProblem::Schema1);
    }
    let media = if json.media_type.is_empty() {
        content_type.to_string()
    } else {
        json.media_type
    };
    let (manifest, summary) = match (json.manifests, json.config) {
        (Some(entries), _) => {
            let summary = format!("index {media} {digest} ({} manifests)", entries.len());
            (Manifest::Index(entries), summary)
        }
        (None, Some(config)) => {
            let summary = format!("manifest {media} {digest} ({} layers)", json.layers.len());
            (
                Manifest::Image {
                    config,
                    layers: json.layers,
                },
                summary,
            )
        }
        (None, None) => return Err(ManifestProblem::Empty { media, digest }),
    };
    Ok(ReadManifest {
        manifest,
        digest,
        summary,
    })
}

/// The sha256 digest of bytes.
pub fn sha256_digest(bytes: &[u8]) -> Digest {
    // `Digest::parse` accepts exactly this shape; building it directly keeps the invariant.
    Digest::from_sha256_hex(&hex(&Sha256::digest(bytes)))
}

/// The child manifest for `wanted`, as containerd's platform matcher picks it: the first entry
/// whose platform matches. Entries without a platform or for `unknown/unknown` (buildx
/// attestation manifests) are never chosen. `Err` lists what the index offers.
pub fn select_platform<'a>(
    entries: &'a [Descriptor],
    wanted: &Platform,
) -> Result<&'a Descriptor, ManifestProblem> {
    entries
        .iter()
        .find(|d| d.platform.as_ref().is_some_and(|p| wanted.matches(p)))
        .ok_or_else(|| ManifestProblem::NoPlatform {
            wanted: wanted.clone(),
            offered: entries
                .iter()
                .filter_map(|d| d.platform.clone())
                .filter(|p| p.os != "unknown")
                .collect(),
        })
}

/// A blob's bytes checked as they stream: never more than the descriptor's size, and at the
/// end exactly its size and digest. Memory stays flat whatever the blob's size.
pub struct BlobCheck {
    expected: Descriptor,
    hasher: Sha256,
    seen: u64,
}

impl BlobCheck {
    pub fn new(expected: &Descriptor) -> BlobCheck {
        BlobCheck {
            expected: expected.clone(),
            hasher: Sha256::new(),
            seen: 0,
        }
    }

    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Feed the next chunk; `Err` as soon as the body is longer than the descriptor says.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), BodyProblem> {
        self.seen += chunk.len() as u64;
        if self.seen > self.expected.size {
            return Err(BodyProblem::Longer {
                size: self.expected.size,
            });
        }
        self.hasher.update(chunk);
        Ok(())
    }

    /// The body ended: its size and digest must be the descriptor's.
    pub fn finish(self) -> Result<u64, BodyProblem> {
        if self.seen != self.expected.size {
            return Err(BodyProblem::Size {
                got: self.seen,
                want: self.expected.size,
            });
        }
        let got = Digest::from_sha256_hex(&hex(&self.hasher.finalize()));
        if got != self.expected.digest {
            return Err(BodyProblem::Digest {
                got,
                want: self.expected.digest,
            });
        }
        Ok(self.seen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(bytes: &[u8]) -> Descriptor {
        Descriptor {
            media_type: "application/vnd.oci.image.layer.v1.tar+gzip".into(),
            digest: sha256_digest(bytes),
            size: bytes.len() as u64,
            platform: None,
        }
    }

    #[test]
    fn blobs_must_match_size_and_digest() {
        let d = desc(b"hello");
        let mut ok = BlobCheck::new(&d);
        ok.feed(b"hel").and_then(|()| ok.feed(b"lo")).expect("fits");
        assert_eq!(ok.finish(), Ok(5));
        let mut other = BlobCheck::new(&d);
        other.feed(b"jello").expect("same size");
        assert_eq!(
            other.finish(),
            Err(BodyProblem::Digest {
                got: sha256_digest(b"jello"),
                want: d.digest.clone(),
            })
        );
        let mut long = BlobCheck::new(&d);
        assert_eq!(long.feed(b"hello!"), Err(BodyProblem::Longer { size: 5 }));
        let mut short = BlobCheck::new(&d);
        short.feed(b"hell").expect("fits");
        assert_eq!(short.finish(), Err(BodyProblem::Size { got: 4, want: 5 }));
    }

    #[test]
    fn manifests_by_digest_must_hash_to_it() {
        let config = desc(b"{}");
        let body = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"x","digest":"{}","size":2}},"layers":[]}}"#,
            config.digest
        );
        let right = sha256_digest(body.as_bytes());
        let read = interpret_manifest(body.as_bytes(), Some(&right), "").expect("manifest");
        assert!(matches!(read.manifest, Manifest::Image { .. }));
        assert!(read.summary.contains("0 layers"));
        let wrong = sha256_digest(b"something else");
        let err = interpret_manifest(body.as_bytes(), Some(&wrong), "").expect_err("mismatch");
        assert_eq!(
            err,
            ManifestProblem::Digest {
                asked: wrong,
                got: right
            }
        );
        assert!(matches!(
            interpret_manifest(b"<html>", None, "text/html"),
            Err(ManifestProblem::NotJson { .. })
        ));
        assert_eq!(
            interpret_manifest(br#"{"schemaVersion":1,"fsLayers":[]}"#, None, "").err(),
            Some(ManifestProblem::Schema1)
        );
        let bad_digest =
            r#"{"schemaVersion":2,"config":{"digest":"sha256:zz","size":1},"layers":[]}"#;
        assert!(matches!(
            interpret_manifest(bad_digest.as_bytes(), None, ""),
            Err(ManifestProblem::NotJson { .. })
        ));
        assert!(matches!(
            interpret_manifest(br#"{"schemaVersion":2}"#, None, "x/y"),
            Err(ManifestProblem::Empty { media, .. }) if media == "x/y"
        ));
    }

    #[test]
    fn platform_selection_skips_attestations() {
        let index = format!(
            r#"{{"schemaVersion":2,"manifests":[
                {{"digest":"{a}","size":1,"platform":{{"os":"unknown","architecture":"unknown"}}}},
                {{"digest":"{b}","size":1,"platform":{{"os":"linux","architecture":"arm64","variant":"v8"}}}},
                {{"digest":"{c}","size":1,"platform":{{"os":"linux","architecture":"amd64"}}}}]}}"#,
            a = sha256_digest(b"a"),
            b = sha256_digest(b"b"),
            c = sha256_digest(b"c")
        );
        let Manifest::Index(entries) = interpret_manifest(index.as_bytes(), None, "")
            .expect("index")
            .manifest
        else {
            panic!("an index")
        };
        let amd64 = Platform::parse("linux/amd64").expect("platform");
        assert_eq!(
            select_platform(&entries, &amd64).expect("amd64").digest,
            sha256_digest(b"c")
        );
        let arm = Platform::parse("linux/arm64/v8").expect("platform");
        assert_eq!(
            select_platform(&entries, &arm).expect("arm64").digest,
            sha256_digest(b"b")
        );
        let s390x = Platform::parse("linux/s390x").expect("platform");
        let Err(ManifestProblem::NoPlatform { wanted, offered }) =
            select_platform(&entries, &s390x)
        else {
            panic!("no platform")
        };
        assert_eq!(wanted, s390x);
        let offered: Vec<String> = offered.iter().map(ToString::to_string).collect();
        assert_eq!(offered, ["linux/arm64/v8", "linux/amd64"]);
        assert_eq!(
            Platform::parse("linux/arm64/v8").map(|p| p.to_string()),
            Some("linux/arm64/v8".into())
        );
        assert!(Platform::parse("linux").is_none());
    }
}
