#!/usr/bin/env bash
# deploy/make-certs.sh as an operator runs it: it makes what it lists, refuses a user name or a
# --days that would make a wrong certificate, and shows openssl's own error when a step fails.
#   tests/security/make_certs_script_test.sh SOURCE_DIR
set -uo pipefail
script="$1/deploy/make-certs.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$script" "$dir/ok" --days 2 alice bob.smith@example || fail "a good run failed"
for f in ca.pem ca.key server.pem server.key alice.pem alice.key alice-keystore.pem bob.smith@example.pem; do
  [ -s "$dir/ok/$f" ] || fail "no $f"
done
[ "$(stat -c %a "$dir/ok/alice.key")" = 600 ] || fail "alice.key is not 600"
openssl verify -CAfile "$dir/ok/ca.pem" "$dir/ok/alice.pem" >/dev/null || fail "alice.pem is not the CA's"
subject=$(openssl x509 -in "$dir/ok/alice.pem" -noout -subject)
[ "$subject" = "subject=CN = alice" ] || fail "alice.pem's subject is '$subject'"

# expect_refusal WANT ARGS...: exits non-zero, and stderr holds WANT.
expect_refusal() {
  local want=$1 said
  shift
  if said=$("$script" "$@" 2>&1 >/dev/null); then fail "$* succeeded"; fi
  [[ "$said" == *"$want"* ]] || fail "$*: said '$said', not '$want'"
}
expect_refusal "user 'a/CN=admin'" "$dir/slash" 'a/CN=admin'  # (the CN would be admin)
expect_refusal "user 'a b'" "$dir/space" 'a b'
expect_refusal "user '-v'" "$dir/dash" alice -v
expect_refusal "user 'server'" "$dir/server" server  # (it would replace the server's certificate)
expect_refusal "user 'ca'" "$dir/ca" ca
expect_refusal "user 'bob-keystore'" "$dir/ks" bob bob-keystore
expect_refusal "--days 'x'" "$dir/days" --days x alice
expect_refusal "--days '0'" "$dir/zero" --days 0 alice
# A step that fails shows openssl's words, not only an exit code.
mkdir -p "$dir/blocked/ca.pem"
expect_refusal "openssl req failed" "$dir/blocked" alice
expect_refusal "Is a directory" "$dir/blocked" alice
echo "make-certs.sh: every case as expected"
