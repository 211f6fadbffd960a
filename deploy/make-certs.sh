#!/usr/bin/env bash
# A certificate authority, a server certificate and client certificates for Basalt's TLS and
# auth=true (README "Security"), for a development or test cluster on one machine:
#   ca.pem, ca.key              the CA (keep ca.key away from the servers)
#   server.pem, server.key      CN=basalt-server, for 127.0.0.1 and localhost, signed by the CA
#   USER.pem, USER.key          a client certificate (CN=USER: the user it authenticates as)
#   USER-keystore.pem           the key, then the certificate: HBase's client's PEM key store
# P-256 keys (fast to make). A production cluster's certificates come from its own CA.
#   deploy/make-certs.sh DIR [--days N] USER...     (N: how long they hold, 1 by default)
# Sourced (tests/security/make_certs.sh), it only defines key, ca and cert.
set -euo pipefail

# Runs openssl quietly (it reports each step on stderr); when it fails, says which step and
# shows what openssl said.
ossl() {
  local said
  if ! said=$(openssl "$@" 2>&1); then
    echo "make-certs.sh: openssl $1 failed:" >&2
    echo "$said" >&2
    return 1
  fi
}
key() { ossl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }
ca() {  # ca NAME CN [DAYS]
  key "$1.key"
  ossl req -x509 -new -key "$1.key" -subj "/CN=$2" -days "${3:-1}" -out "$1.pem"
}
cert() {  # cert NAME CN CA [EXTFILE] [DAYS]
  key "$1.key"
  ossl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
  ossl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial -days "${5:-1}" -out "$1.pem" \
    ${4:+-extfile "$4"}
  rm -f "$1.csr"
}

[[ "${BASH_SOURCE[0]}" == "$0" ]] || return 0
[ $# -ge 1 ] || { echo "usage: $0 DIR [--days N] USER..." >&2; exit 2; }
dir=$1
shift
days=1
if [ "${1:-}" = "--days" ]; then days=${2:-}; shift $(($# >= 2 ? 2 : 1)); fi
if ! [[ "$days" =~ ^[1-9][0-9]{0,5}$ ]]; then
  echo "make-certs.sh: --days '$days': a whole number of days from 1 to 999999" >&2
  exit 2
fi
# A user's name is the certificate's CN, given to openssl as "/CN=NAME": a '/' or '=' would
# start another field, so a name is letters, digits and . _ @ - only, not first a '-' (an
# option to the commands that take the files). It names the files too: not one of the script's
# own (the CA's, the server's, the tests' rogue and expired ones), nor another user's key store.
for user in "$@"; do
  if ! [[ "$user" =~ ^[A-Za-z0-9._@][A-Za-z0-9._@-]*$ ]]; then
    echo "make-certs.sh: user '$user': a name of letters, digits, '.', '_', '@' and '-' (not first) only" >&2
    exit 2
  fi
  case "$user" in
    ca | server | rogue | rogue-ca | expired | *-keystore)
      echo "make-certs.sh: user '$user': the name of one of this script's own files" >&2
      exit 2
      ;;
  esac
done
mkdir -p "$dir"
cd "$dir"
ca ca "Basalt CA" "$days"
printf 'subjectAltName = IP:127.0.0.1, DNS:localhost\n' >server.ext
cert server basalt-server ca server.ext "$days"
for user in "$@"; do
  cert "$user" "$user" ca "" "$days"
  cat "$user.key" "$user.pem" >"$user-keystore.pem"
done
rm -f server.ext ./*.srl
for f in ./*.key ./*-keystore.pem; do
  if [ -e "$f" ]; then chmod 600 "$f"; fi
done
