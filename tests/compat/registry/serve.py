#!/usr/bin/env python3
"""A tiny npm registry for moat's compatibility suite (tests/compat/node-npm).

serve.py ADDRESS PACKAGE_DIR PROJECT_DIR...: packs PACKAGE_DIR (a package.json and its files)
into a tarball as `npm pack` lays it out (every path under package/), serves its packument at
/NAME and the tarball at /NAME/-/NAME-VERSION.tgz on ADDRESS and a free port, writes each
PROJECT_DIR's .npmrc (the registry) and package-lock.json (resolved to this registry, with
the tarball's sha512 integrity), then prints the port on its first line. Nothing is
downloaded: the registry serves only this one package.
"""
import base64
import hashlib
import http.server
import io
import json
import os
import sys
import tarfile


def pack(package_dir):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.USTAR_FORMAT) as tar:
        for root, dirs, files in os.walk(package_dir):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(root, name)
                rel = os.path.relpath(path, package_dir)
                info = tar.gettarinfo(path, "package/" + rel)
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mtime = 499162500  # npm pack's fixed date (1985-10-26)
                with open(path, "rb") as f:
                    tar.addfile(info, f)
    return buf.getvalue()


def main():
    address, package_dir, projects = sys.argv[1], sys.argv[2], sys.argv[3:]
    manifest = json.load(open(os.path.join(package_dir, "package.json")))
    name, version = manifest["name"], manifest["version"]
    tgz = pack(package_dir)
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()
    shasum = hashlib.sha1(tgz).hexdigest()
    tgz_path = "/%s/-/%s-%s.tgz" % (name, name, version)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            base = "http://%s:%d" % (address, self.server.server_address[1])
            if self.path.split("?")[0] in ("/" + name, "/" + name + "/"):
                dist = {"tarball": base + tgz_path, "integrity": integrity, "shasum": shasum}
                body = json.dumps({"name": name, "dist-tags": {"latest": version},
                                   "versions": {version: dict(manifest, dist=dist)}}).encode()
                kind = "application/json"
            elif self.path == tgz_path:
                body, kind = tgz, "application/octet-stream"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *args):
            sys.stderr.write("registry: " + fmt % args + "\n")

    server = http.server.ThreadingHTTPServer((address, 0), Handler)
    port = server.server_address[1]
    base = "http://%s:%d" % (address, port)
    for project in projects:
        pkg = json.load(open(os.path.join(project, "package.json")))
        deps = pkg.get("devDependencies", {})
        lock = {"name": pkg["name"], "version": pkg["version"], "lockfileVersion": 3,
                "requires": True,
                "packages": {"": {"name": pkg["name"], "version": pkg["version"],
                                  "devDependencies": deps},
                             "node_modules/" + name: {
                                 "version": version, "resolved": base + tgz_path,
                                 "integrity": integrity, "dev": True, "license": "MIT",
                                 "bin": manifest.get("bin", {})}}}
        with open(os.path.join(project, "package-lock.json"), "w") as f:
            json.dump(lock, f, indent=2)
            f.write("\n")
        with open(os.path.join(project, ".npmrc"), "w") as f:
            # No retries: the registry is local, and a refused connection should fail at once.
            f.write("registry=%s/\naudit=false\nfund=false\nupdate-notifier=false\n"
                    "fetch-retries=0\n" % base)
    print(port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
