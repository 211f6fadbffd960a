#!/usr/bin/env bash
# Makes the certificates the security tests use (README "Security" shows the same steps):
#   ca.pem, ca.key            the test CA
#   server.pem, server.key    CN=basalt-server, for 127.0.0.1 and localhost, signed by the CA
#   USER.pem, USER.key        a client certificate (CN=USER) for each USER given, signed by the CA
#                             (and USER-keystore.pem, HBase's client's key store)
#   rogue-ca.pem, rogue.pem, rogue.key   another CA, and a client certificate (CN=admin) it signed
#   expired.pem, expired.key  CN=admin, signed by the CA, expired the second it was made
# P-256 keys (fast to make), valid one day: deploy/make-certs.sh's, and the two above.
#   tests/security/make_certs.sh DIR USER...
set -euo pipefail
certs="$(cd "$(dirname "$0")/../../deploy" && pwd)/make-certs.sh"
"$certs" "$@"
. "$certs"  # key, ca, cert
cd "$1"
ca rogue-ca "Not the Basalt CA"
cert rogue admin rogue-ca
cert expired admin ca "" 0  # (-days 0: not after the moment it was signed)
rm -f server.ext ./*.srl
