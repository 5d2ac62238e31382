#!/usr/bin/env python3
"""The lab's kubelet credential provider plugin: the real exec protocol of the kubelet
(k/k pkg/credentialprovider/plugin/plugin.go; credentialprovider.kubelet.k8s.io/v1): a
CredentialProviderRequest on stdin, a CredentialProviderResponse on stdout, an error on stderr
with a non-zero exit.

  credential_provider.py --identity alice   answer alice's credentials for *.example.test
  credential_provider.py --identity stale   answer alice with a password the token service refuses
  credential_provider.py --fail             fail as a plugin whose cloud identity is missing
"""

import json
import sys

API_VERSION = "credentialprovider.kubelet.k8s.io/v1"
IDENTITIES = {"alice": ("alice", "alice-secret"), "stale": ("alice", "alice-stale-token")}


def main(argv):
    try:
        request = json.load(sys.stdin)
    except ValueError as e:
        print(f"error: cannot decode the CredentialProviderRequest: {e}", file=sys.stderr)
        return 1
    if request.get("apiVersion") != API_VERSION or request.get("kind") != "CredentialProviderRequest":
        print(f"error: unexpected request {request.get('apiVersion')}/{request.get('kind')}", file=sys.stderr)
        return 1
    if "--fail" in argv:
        print("error: failed to get a token for the node identity: identity not found (the lab's "
              "plugin was told to fail)", file=sys.stderr)
        return 1
    name = argv[argv.index("--identity") + 1] if "--identity" in argv else "alice"
    username, password = IDENTITIES[name]
    json.dump({
        "kind": "CredentialProviderResponse",
        "apiVersion": API_VERSION,
        "cacheKeyType": "Registry",
        "cacheDuration": "5m",
        "auth": {"*.example.test": {"username": username, "password": password}},
    }, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
