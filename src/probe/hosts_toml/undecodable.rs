//! Why a `hosts.toml` does not decode as containerd decodes it, with what was seen. containerd
//! logs it ("failed to decode hosts.toml") and falls back to the directory's `*.crt` files; the
//! walk says so in a note worded by `Display`.

use crate::runtime::version::ContainerdLine;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Undecodable {
    /// Not TOML at all.
    #[error("{}", .0.message())]
    Toml(toml::de::Error),
    #[error("`host` is not a table")]
    HostTreeNotTable,
    #[error("host {key:?} is not a table")]
    HostNotTable { key: String },
    /// 1.6 and 1.7 fail to decode a file without it (`getSortedHosts`: "invalid `host` tree").
    #[error("no [host] table, which containerd {} cannot read (2.x can)", .line.as_str())]
    NoHostTable { line: ContainerdLine },
    #[error("`server` is not a string")]
    ServerNotString,
    #[error("host {url:?}: {error}")]
    BadUrl { url: String, error: url::ParseError },
    #[error("host {url:?}: not http(s)")]
    NotHttp { url: String },
    #[error("host {url:?} names no host")]
    NoHost { url: String },
    #[error("unknown capability {value}")]
    UnknownCapability { value: toml::Value },
    #[error("capabilities {value} is not a list")]
    CapabilitiesNotList { value: toml::Value },
    #[error("ca list entries are paths")]
    CaEntryNotPath { value: toml::Value },
    #[error("invalid type {type_name} for \"ca\"")]
    CaWrongType { type_name: &'static str },
    #[error("header {name:?}: not a string")]
    HeaderNotString { name: String, value: toml::Value },
    #[error("invalid type {type_name} for header {name:?}")]
    HeaderWrongType {
        name: String,
        type_name: &'static str,
    },
}
