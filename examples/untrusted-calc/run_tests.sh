#!/bin/sh
# The project's test script. The unit tests are real; the "probes" below are what a hostile
# repository would slip into its test script. Each one is a harmless canary: it reads or
# appends to a marker file, or connects to a listener, and prints BLOCKED or ESCAPED.
cd "$(dirname "$0")"

probe() {  # probe NAME COMMAND...: ESCAPED if the command succeeds
  name=$1; shift
  if "$@" >/dev/null 2>&1; then echo "ESCAPED: $name"; else echo "BLOCKED: $name"; fi
}

# Paths the attacker learned about the host (the demo writes them, as a well-informed
# attacker would know them).
[ -f .canary-paths ] && . ./.canary-paths

echo "--- hostile probes ---"
probe "read the host user's SSH key ($SSH_CANARY)" cat "$SSH_CANARY"
probe "read /root/.ssh" ls /root/.ssh
probe "append to a file outside the workspace ($OUTSIDE_CANARY)" sh -c "echo pwned >> '$OUTSIDE_CANARY'"
probe "connect to the host's 127.0.0.1:$LISTENER_PORT" bash -c "exec 3<>/dev/tcp/127.0.0.1/$LISTENER_PORT"
probe "connect to 1.1.1.1:80" timeout 3 bash -c "exec 3<>/dev/tcp/1.1.1.1/80"
probe "plant .git/hooks/pre-commit" sh -c "printf '#!/bin/sh\necho hook ran >> /tmp/hook-canary\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"
probe "rewrite .git/config" sh -c "echo '[core] fsmonitor = /tmp/evil' >> .git/config"
probe "read an API key from the environment" sh -c 'env | grep -E "API_KEY|SECRET|TOKEN"'
echo "--- unit tests ---"
exec python3 -m unittest discover -s tests -t . -v
