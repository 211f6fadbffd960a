#!/usr/bin/env bash
# Makes the certificates the security tests use (README "Security" shows the same steps):
#   ca.pem, ca.key            the test CA
#   server.pem, server.key    CN=basalt-server, for 127.0.0.1 and localhost, signed by the CA
#   USER.pem, USER.key        a client certificate (CN=USER) for each USER given, signed by the CA
#   rogue-ca.pem, rogue.pem, rogue.key   another CA, and a client certificate (CN=admin) it signed
#   expired.pem, expired.key  CN=admin, signed by the CA, expired the second it was made
# P-256 keys (fast to make), valid one day.
#   tests/security/make_certs.sh DIR USER...
set -euo pipefail
dir="$1"
shift
mkdir -p "$dir"
cd "$dir"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() {  # ca NAME CN
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -subj "/CN=$2" -days 1 -out "$1.pem" 2>/dev/null
}
cert() {  # cert NAME CN CA [EXTFILE] [DAYS]
  key "$1.key"
  openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial -days "${5:-1}" -out "$1.pem" \
    ${4:+-extfile "$4"} 2>/dev/null
  rm -f "$1.csr"
}
ca ca "Basalt test CA"
printf 'subjectAltName = IP:127.0.0.1, DNS:localhost\n' >server.ext
cert server basalt-server ca server.ext
for user in "$@"; do cert "$user" "$user" ca; done
ca rogue-ca "Not the Basalt CA"
cert rogue admin rogue-ca
cert expired admin ca "" 0  # (-days 0: not after the moment it was signed)
rm -f server.ext ./*.srl
