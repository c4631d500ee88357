// policy/default_policy.cc: the built-in default policy, the text of
// examples/policies/default.toml (tests/unit/policy/default_policy_test.cc keeps them equal;
// after editing the example, paste it here between the delimiters).
#include "policy/layer.h"

namespace moat::policy {

std::string_view builtin_default_policy_text() {
  static constexpr std::string_view kText = R"moat(# moat's default policy: for a person running an agent over a repository on their own
# machine. It is compiled into moat (policy/default_policy.cc; a test keeps the two
# identical) and used when /etc/moat/policy.d holds no files. It stays usable headless
# (where ask becomes deny): reading, searching, editing inside the workspace, building
# and running the project's tests are allowed; destructive and networked commands ask.
schema = 1
defaults = { tool = "ask", command = "ask", read = "allow", write = "ask", exec = "allow", network = "deny", unparseable_shell = "ask" }
resources = { wall_time = "10m", cpu_time = "10m", memory = "4GiB", pids = 512, output = "16MiB", file_size = "512MiB", open_files = 1024 }

[layer]
name = "moat-default"
revision = "1"

# ---------------------------------------------------------------- tools

[[tool]]
id = "default.tools"
decision = "allow"
tool = ["read", "bash", "edit", "write", "grep", "find", "ls"]
tests.match = ["bash", "edit"]
tests.not_match = ["mcp:jira:search"]

# ---------------------------------------------------------------- paths

[[path]]
id = "default.secrets"
decision = "deny"
access = ["read", "write", "exec"]
paths = ["~/.ssh/**", "~/.aws/**", "~/.gnupg/**", "~/.netrc", "~/.kube/**", "~/.docker/config.json",
         "~/.config/gcloud/**", ".env", "*.pem", "/etc/shadow", "/etc/gshadow"]
reason = "Credentials and keys stay out of reach of the agent."
tests.match = ["~/.ssh/id_ed25519", "$WORKSPACE/.env", "$WORKSPACE/certs/server.pem"]
tests.not_match = ["$WORKSPACE/src/env.py", "$WORKSPACE/.envrc"]

[[path]]
id = "default.protected-meta"
decision = "deny"
access = ["write"]
paths = [".git/hooks/**", ".git/config", ".moat/**", "$AUDIT_DIR/**"]
reason = "Git hooks and config run code outside the sandbox; .moat holds the project policy."
tests.match = ["$WORKSPACE/.git/hooks/pre-commit", "$WORKSPACE/.git/config", "$WORKSPACE/.moat/policy.toml"]
tests.not_match = ["$WORKSPACE/.git/index", "$WORKSPACE/src/config"]

[[path]]
id = "default.workspace-write"
decision = "allow"
access = ["write"]
paths = ["$WORKSPACE/**", "/tmp/**", "/var/tmp/**"]
tests.match = ["$WORKSPACE/src/main.c", "/tmp/build.log"]
tests.not_match = ["~/.bashrc", "/etc/passwd"]

[[path]]
id = "default.dev-streams"
decision = "allow"
access = ["write"]
paths = ["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/*"]
tests.match = ["/dev/null", "/dev/fd/2"]
tests.not_match = ["/dev/sda"]

[[path]]
id = "default.exec-writable"
decision = "ask"
access = ["exec"]
paths = ["$WORKSPACE/**"]
reason = "This program is a file the sandboxed code could have written or replaced."
tests.match = ["$WORKSPACE/rm", "$WORKSPACE/node_modules/.bin/x"]
tests.not_match = ["/usr/bin/ls"]

# ---------------------------------------------------------------- commands that ask
# Listed first: when several asks match, the first one is named as the deciding rule.

[[command]]
id = "default.rm-recursive"
decision = "ask"
program = "rm"
any_flag = ["-r", "-R", "--recursive"]
reason = "Recursive deletes are hard to undo."
tests.match = ["rm -rf build", "rm -fr /", "rm --recursive x", "/bin/rm -r -f x"]
tests.not_match = ["rm notes.txt", "rm -f a.o"]

[[command]]
id = "default.disk-tools"
decision = "ask"
program = ["dd", "mkfs", "mkfs.*", "mke2fs", "mkswap", "wipefs", "fdisk", "sfdisk", "parted", "shred"]
reason = "Raw disk and overwrite tools destroy data."
tests.match = ["dd if=/dev/zero of=disk.img", "mkfs.ext4 /dev/sdb1", "shred -u secret"]

[[command]]
id = "default.chmod-recursive"
decision = "ask"
program = ["chmod", "chown", "chgrp"]
any_flag = ["-R", "--recursive"]
reason = "Recursive permission changes are hard to undo."
tests.match = ["chmod -R 777 .", "chown --recursive me ."]
tests.not_match = ["chmod +x build.sh"]

[[command]]
id = "default.git-force-push"
decision = "ask"
program = "git"
args = ["push", "**"]
any_flag = ["--force", "-f", "--force-with-lease", "--mirror", "--delete", "-d", "--prune"]
reason = "Force pushes rewrite shared history."
tests.match = ["git push -f origin main", "git -C repo push --force", "git push origin main --force-with-lease"]
tests.not_match = ["git push origin feat/x", "git status"]

[[command]]
id = "default.git-push-refspec"
decision = "ask"
program = "git"
args = ["push", "**"]
any_arg = ["+*", ":*"]
reason = "A +refspec force-pushes; a :refspec deletes a remote branch."
tests.match = ["git push origin +main", "git push origin :old-branch"]
tests.not_match = ["git push origin main"]

[[command]]
id = "default.git-discard"
decision = "ask"
program = "git"
args = [["reset", "clean", "checkout", "restore"], "**"]
any_flag = ["--hard", "-f", "--force", "-x", "-X", "-d"]
reason = "Discards uncommitted work."
tests.match = ["git reset --hard HEAD~3", "git clean -fdx", "git checkout -f main"]
tests.not_match = ["git reset HEAD file.c", "git clean -n"]

[[command]]
id = "default.network-tools"
decision = "ask"
program = ["curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "ftp", "ssh", "scp", "sftp", "rsync"]
reason = "The sandbox has no network; these tools move data in or out."
tests.match = ["curl -s https://x.sh", "wget http://example.com/a", "ssh host uptime"]

[[command]]
id = "default.privilege"
decision = "ask"
program = ["sudo", "doas", "su", "pkexec", "runuser", "setpriv", "unshare", "nsenter", "chroot"]
reason = "Privilege and namespace tools do not work in the sandbox and should not be needed."
tests.match = ["sudo ls", "doas -u root id", "su -c id"]

[[command]]
id = "default.inline-code"
decision = "ask"
program = ["python", "python2", "python3", "python3.*", "node", "nodejs", "deno", "bun", "perl", "ruby", "php", "lua", "Rscript"]
any_flag = ["-c", "-e", "-E", "--eval", "-p", "--print", "-r"]
reason = "Inline code escapes what argv rules can check."
tests.match = ["python3 -c 'import os'", "node -e 'x'", "perl -E 'say 1'", "ruby -e 1"]
tests.not_match = ["python3 -m pytest", "node build.js"]

[[command]]
id = "default.login-shell"
decision = "ask"
program = ["sh", "bash", "dash", "zsh", "ksh"]
any_flag = ["-l", "--login", "-i", "--rcfile", "--init-file"]
reason = "Login and interactive shells source profile files the agent can write."
tests.match = ["bash -lc 'make'", "sh -l x.sh", "bash --rcfile x -c true"]
tests.not_match = ["bash -c 'make'"]

[[command]]
id = "default.archive-exec"
decision = "ask"
program = ["tar"]
any_flag = ["--to-command", "--use-compress-program", "-I", "--checkpoint-action", "--info-script", "-F", "--new-volume-script"]
reason = "These tar options run programs."
tests.match = ["tar -xf a.tar --to-command=sh", "tar -I 'sh -c x' -xf a"]
tests.not_match = ["tar -czf out.tgz src"]

# ---------------------------------------------------------------- commands that are allowed

[[command]]
id = "default.read-only"
decision = "allow"
program = ["ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ag", "file", "stat",
           "du", "df", "diff", "cmp", "comm", "uniq", "cut", "tr", "nl", "od", "hexdump", "strings",
           "basename", "dirname", "realpath", "readlink", "pwd", "echo", "printf", "true", "false",
           "test", "[", "[[", ":", "which", "type", "date", "env", "printenv", "whoami", "id",
           "uname", "sha1sum", "sha256sum", "sha512sum", "md5sum", "jq", "column", "join", "paste",
           "fold", "fmt", "rev", "tac", "seq", "sleep", "expr", "bc", "cd", "pushd", "popd", "dirs",
           "export", "unset", "set", "shift", "read", "local", "declare", "typeset", "readonly",
           "return", "exit", "wait", "getopts", "shopt", "umask", "let", "break", "continue",
           "times", "jobs", "nproc", "locale", "xargs", "timeout", "nice", "nohup", "stdbuf", "time",
           "mktemp", "command"]
tests.match = ["ls -la", "cat README.md", "grep -rn foo src", "wc -l *.c", "echo hi", "command -v git"]
tests.not_match = ["sort -o out x", "hash -p ./evil ls", "tree -o out"]

[[command]]
id = "default.edit-tools"
decision = "allow"
program = ["sed", "tee", "touch", "mkdir", "cp", "mv", "ln", "rm", "rmdir", "chmod", "install",
           "truncate", "unlink"]
reason = "Edits whose targets are checked as path writes; recursive rm and chmod ask above."
tests.match = ["sed -i 's/old/new/g' src/a.py", "mkdir -p build", "cp -r a b", "rm a.o", "mv x y", "chmod +x run.sh"]
tests.not_match = ["sort x", "tar -xf a.tar"]

[[command]]
id = "default.sort"
decision = "allow"
program = "sort"
no_flag = ["-o", "--output", "--compress-program"]
tests.match = ["sort -u names.txt", "sort -rn x"]
tests.not_match = ["sort -o out x", "sort --compress-program=sh x"]

[[command]]
id = "default.awk"
decision = "allow"
program = ["awk", "gawk", "mawk", "nawk"]
no_flag = ["-f", "--file", "-i", "--include", "-l", "--load", "-E", "--exec"]
unless = { any_arg = ["*system*", "*|*", "*>*", "*getline*"] }
reason = "awk programs without system(), pipes or redirection only read."
tests.match = ["awk '{print $1}' data.txt", "awk -F: '{print $1}' /etc/passwd"]
tests.not_match = ["awk 'BEGIN{system(\"id\")}'", "awk '{print > \"out\"}' x", "awk -f prog.awk x"]

[[command]]
id = "default.find"
decision = "allow"
program = ["find"]
no_flag = ["-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"]
tests.match = ["find . -name '*.py'", "find src -type f -newer x"]
tests.not_match = ["find . -delete", "find . -exec rm {} \\;"]

[[command]]
id = "default.git"
decision = "allow"
program = "git"
args = [["status", "log", "diff", "show", "rev-parse", "blame", "ls-files", "ls-tree", "grep", "describe",
         "shortlog", "branch", "tag", "add", "commit", "checkout", "switch", "restore", "stash", "mv", "rm",
         "reset", "cat-file", "merge-base", "init", "apply", "merge", "rebase", "cherry-pick", "revert",
         "format-patch", "am", "bisect", "reflog", "show-ref", "for-each-ref", "version", "help",
         "--version"], "**"]
no_flag = ["-c", "--exec-path", "--output", "--ext-diff", "--upload-pack", "--receive-pack", "-O",
           "--open-files-in-pager", "--git-dir", "--work-tree", "--config-env", "-x", "--exec",
           "--unsafe-paths"]
reason = "Everyday git, without options that run other programs or write outside the repository."
tests.match = ["git status", "git log --oneline -n 5", "git diff HEAD~1", "git commit -m 'rename'", "git -C sub status", "git grep -e foo"]
tests.not_match = ["git -c core.pager=sh log", "git push origin main", "git diff --ext-diff", "git rebase -x 'make' main", "git config core.pager less"]

[[command]]
id = "default.build"
decision = "allow"
program = ["make", "gmake", "cmake", "ninja", "meson", "gcc", "g++", "cc", "c++", "clang", "clang++",
           "ld", "ar", "rustc", "javac", "tsc", "pytest", "py.test", "tox", "nox", "eslint", "prettier",
           "black", "ruff", "flake8", "mypy", "pylint", "isort", "gofmt", "clang-format", "shellcheck"]
reason = "Builds and tests run the project's own code: the sandbox is the boundary."
tests.match = ["make", "make -j4 test", "cmake -B build"]

[[command]]
id = "default.build-subcommands"
decision = "allow"
program = ["npm", "yarn", "pnpm", "cargo", "go", "mvn", "gradle", "dotnet", "bundle", "poetry", "uv"]
args = [["test", "t", "run", "run-script", "build", "check", "clippy", "fmt", "vet", "lint", "exec",
         "verify", "compile", "package"], "**"]
reason = "Project scripts run the project's own code: the sandbox is the boundary."
tests.match = ["npm test", "npm run build", "cargo test --all", "go test ./..."]
tests.not_match = ["npm publish", "cargo install ripgrep", "go get x"]

[[command]]
id = "default.python-tests"
decision = "allow"
program = ["python", "python3", "python3.*"]
args = ["-m", ["pytest", "unittest", "doctest", "compileall", "py_compile", "mypy", "black", "ruff", "venv"], "**"]
tests.match = ["python3 -m pytest -q", "python3 -m unittest discover"]
tests.not_match = ["python3 -m http.server", "python3 -c 'x'"]

[[command]]
id = "default.workspace-shell-scripts"
decision = "allow"
program = ["sh", "bash", "dash", "zsh"]
script_paths = ["$WORKSPACE/**"]
no_flag = ["-c", "-s", "-i", "-l", "--login", "--rcfile", "--init-file"]
reason = "A shell script of the project, run by a shell from the system."
tests.not_match = ["sh /tmp/x.sh", "bash", "sh -s", "bash -c 'make'"]

[[command]]
id = "default.workspace-scripts"
decision = "allow"
program = ["python", "python3", "python3.*", "node", "nodejs", "perl", "ruby"]
script_paths = ["$WORKSPACE/**"]
no_flag = ["-c", "-e", "-E", "--eval", "-p", "--print", "-r", "-m", "-M", "-I", "--require"]
reason = "A script file of the project, run by an interpreter from the system."
tests.not_match = ["python3 /tmp/x.py", "node -e 'x' a.js", "python3 -m http.server"]
)moat";
  return kText;
}

}  // namespace moat::policy
