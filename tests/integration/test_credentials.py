#!/usr/bin/python3
"""Secrets that never stand on a command line: -o credentials=FILE, -o netrc[=FILE] and the AWS
environment variables; which source comes first; the refusals; and that no secret shows where
other users look.

Servers on 127.0.0.1 (remote_servers.py): nginx asking for Basic authentication
(auth_basic_user_file, a {PLAIN} password), nginx asking for "Authorization: Bearer TOKEN" (401
otherwise), and s3rver behind SigV4Proxy, which verifies each signature against the keys it
knows and records the access key that signed. The expected bytes come from zarr-python reading
the store directly (test_permissions.build_store).

* HTTP: each source alone opens the store (Basic from the file; bearer from the file; .netrc by
  -o netrc=FILE and by -o netrc, $HOME/.netrc); none is a refused mount naming 401. Precedence:
  the file over the URL's user:password (a wrong password in the URL, the right one in the file
  works; the reverse is refused), the URL over .netrc, the file over .netrc; .netrc is not read
  without -o netrc.
* S3: the file's keys, the environment's, a profile's: with all three the file's key signs,
  without the file the environment's, without both the profile's (the proxy records the key).
* Refusals, each exit status 1 with one line naming the file (and the line), no mount, no
  secret in the message: mode 0644 (and 0640), another owner (chown 54321), a directory, a
  missing file, a malformed line, an unknown key; the same checks for a .netrc file.
* Nothing leaks (log_level=debug, stats_log=1): the password, the token, the secret key (and
  the key id) are not in the daemon's output, the files, xattrs and statistics of the mount,
  /proc/mounts, or /proc/PID/cmdline (what ps shows).
"""

import os
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True          # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
from zfmount import log  # noqa: E402
import remote_servers as rs  # noqa: E402
from test_permissions import build_store, expected, walk_readable, proc_mounts  # noqa: E402

WORK = None
STORE = None
USER, PASSWORD = "zfuser", "zfCredPassw0rd-Sekrit"
TOKEN = "zfBearer-T0ken.Sekrit_42"
S3_KEYS = {"AKIAZFCREDFILE000001": "zfCredFile/Secret+Key=000001",
           "AKIAZFCREDENV0000002": "zfCredEnv/Secret+Key=000002",
           "AKIAZFCREDPROF000003": "zfCredProfile/Secret+Key=000003"}
FILE_KEY, ENV_KEY, PROFILE_KEY = sorted(S3_KEYS)[0], sorted(S3_KEYS)[1], sorted(S3_KEYS)[2]
OTHER_UID = 54321


def setUpModule():
    global WORK, STORE
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-creds-")
    os.chmod(WORK, 0o755)                 # nginx's worker passes through
    STORE = build_store(os.path.join(WORK, "creds.zarr"))


def tearDownModule():
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


def secret_file(name, text, mode=0o600):
    """WORK/secrets/name holding text, with mode (the directory is root's, 0700)."""
    d = os.path.join(WORK, "secrets")
    os.makedirs(d, mode=0o700, exist_ok=True)
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write(text)
    os.chmod(p, mode)
    return p


def with_userinfo(url, userinfo):
    return url.replace("://", "://%s@" % userinfo, 1)


def cmdline(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        return f.read().decode("latin-1").replace("\0", " ")


class Leaks:
    def check_absent(self, texts, needles):
        for where, text in texts.items():
            for what, s in needles.items():
                self.assertNotIn(s, text, "the %s appears in %s" % (what, where))

    def mount_and_check(self, store, options, needles, label):
        """Mount with log_level=debug,stats_log=1 (+ options), read array a, and check that no
        needle shows anywhere other users look. Returns the mount's stderr."""
        opts = ["log_level=debug", "stats_log=1", "allow_other", "retries=1"] + options
        with zfmount.Mount(store, options=opts, label=label) as m:
            self.assertBytesEqual(zfmount.read_all(m.path("a")), expected(STORE, "a"), "a")
            seen = walk_readable(self, m.mnt)
            time.sleep(1.5)                   # a stats_log line
            mounts = proc_mounts()
            cmd = cmdline(m.pid)
        err = m.stderr_text()
        self.assertIn("stats: ", err, "no stats_log line in the daemon's output")
        self.check_absent({"the daemon's output": err, "the mount (files, xattrs, stats)": seen,
                           "/proc/mounts": mounts, "the daemon's command line": cmd}, needles)
        return err


def refused(tc, store, options, *needles):
    """zarrfs refuses to mount: exit status 1, nothing mounted, its message holds each needle.
    Returns the message."""
    status, err, mounted = zfmount.expect_refusal(store, ["-o", ",".join(options)])
    tc.assertEqual(status, 1, err)
    tc.assertFalse(mounted, "mounted anyway")
    for n in needles:
        tc.assertIn(n, err)
    return err


class Http(zfmount.TestCase, Leaks):
    @classmethod
    def setUpClass(cls):
        users = secret_file("htpasswd", "%s:{PLAIN}%s\n" % (USER, PASSWORD))
        cls.basic = rs.Nginx(WORK, extra_server='auth_basic "zarrfs"; auth_basic_user_file %s;'
                             % users).start()
        cls.bearer = rs.Nginx(WORK, extra_server='if ($http_authorization != "Bearer %s") '
                              '{ return 401; }' % TOKEN).start()

    @classmethod
    def tearDownClass(cls):
        cls.basic.stop()
        cls.bearer.stop()

    def test_01_basic_from_the_file(self):
        url = self.basic.url("creds.zarr")
        refused(self, url, ["retries=0"], "401", "-o credentials=FILE")
        creds = secret_file("basic", "# the test's server\nhttp_user = %s\nhttp_password = %s\n"
                            % (USER, PASSWORD))
        self.mount_and_check(url, ["credentials=" + creds], {"password": PASSWORD}, "cred-basic")
        statuses = {e.status for e in self.basic.access_entries()}
        self.assertIn(401, statuses, "the server never asked for credentials")
        log("  basic: refused without, mounted with -o credentials; statuses seen %s"
            % sorted(statuses))

    def test_02_the_file_over_the_url(self):
        right = secret_file("basic", "http_user = %s\nhttp_password = %s\n" % (USER, PASSWORD))
        wrong = secret_file("basic-wrong", "http_user = %s\nhttp_password = nope\n" % USER)
        url = self.basic.url("creds.zarr")
        bad_url = with_userinfo(url, USER + ":nope")
        good_url = with_userinfo(url, "%s:%s" % (USER, PASSWORD))
        with zfmount.Mount(bad_url, options=["credentials=" + right], label="cred-file-url") as m:
            self.assertBytesEqual(zfmount.read_all(m.path("a")), expected(STORE, "a"), "a")
        with zfmount.Mount(good_url, options=[], label="cred-url") as m:     # the URL alone
            self.assertBytesEqual(zfmount.read_all(m.path("g/b")), expected(STORE, "g/b"), "b")
        err = refused(self, good_url, ["credentials=" + wrong, "retries=0"], "401")
        self.assertNotIn(PASSWORD, err)

    def test_03_bearer_from_the_file(self):
        url = self.bearer.url("creds.zarr")
        refused(self, url, ["retries=0"], "401")
        creds = secret_file("bearer", "bearer_token = %s\n" % TOKEN)
        self.mount_and_check(url, ["credentials=" + creds], {"token": TOKEN}, "cred-bearer")
        # a token the server does not take
        creds = secret_file("bearer-wrong", "bearer_token = %s-old\n" % TOKEN)
        err = refused(self, url, ["credentials=" + creds, "retries=0"], "401")
        self.assertNotIn(TOKEN, err)

    def test_04_netrc(self):
        url = self.basic.url("creds.zarr")
        netrc = secret_file("netrc", "machine 127.0.0.1\n  login %s\n  password %s\n"
                            % (USER, PASSWORD))
        self.mount_and_check(url, ["netrc=" + netrc], {"password": PASSWORD}, "cred-netrc")
        # -o netrc: $HOME/.netrc; not read without the option
        home = tempfile.mkdtemp(dir=WORK, prefix="home-")
        shutil.copy(netrc, os.path.join(home, ".netrc"))
        saved = os.environ.get("HOME")
        os.environ["HOME"] = home
        try:
            with zfmount.Mount(url, options=["netrc"], label="cred-home-netrc") as m:
                self.assertBytesEqual(zfmount.read_all(m.path("a")), expected(STORE, "a"), "a")
            refused(self, url, ["retries=0"], "401")
        finally:
            os.environ["HOME"] = saved if saved is not None else "/root"
        # precedence: the URL's user:password, then the file's, over .netrc
        wrong = secret_file("netrc-wrong", "machine 127.0.0.1 login %s password nope\n" % USER)
        good_url = with_userinfo(url, "%s:%s" % (USER, PASSWORD))
        creds = secret_file("basic", "http_user = %s\nhttp_password = %s\n" % (USER, PASSWORD))
        for store, opts in ((good_url, ["netrc=" + wrong]),
                            (url, ["netrc=" + wrong, "credentials=" + creds])):
            with self.subTest(opts=opts):
                with zfmount.Mount(store, options=opts, label="cred-netrc-prec") as m:
                    self.assertBytesEqual(zfmount.read_all(m.path("a")), expected(STORE, "a"),
                                          "a")
        refused(self, url, ["netrc=" + wrong, "retries=0"], "401")


class S3(zfmount.TestCase, Leaks):
    @classmethod
    def setUpClass(cls):
        if not os.access(rs.S3RVER_BIN, os.X_OK):
            raise AssertionError("s3rver is not installed (npm ci --prefix tests/integration/js)")
        cls.s3 = rs.S3rver(["zarrfs"]).start()
        cls.proxy = rs.SigV4Proxy(cls.s3.port, S3_KEYS).start()
        cls.s3.client().upload_tree(STORE, "zarrfs", "creds.zarr")

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.s3.stop()

    def opts(self):
        return ["endpoint=" + self.proxy.endpoint(), "region=us-east-1"]

    def signers(self, since):
        recs = self.proxy.records[since:]
        self.assertTrue(recs, "no request reached the proxy")
        self.assertTrue(all(r.signed and r.verdict == "ok" for r in recs), recs[:3])
        return {r.access_key for r in recs}

    def test_01_the_file(self):
        creds = secret_file("s3", "aws_access_key_id = %s\naws_secret_access_key = %s\n"
                            % (FILE_KEY, S3_KEYS[FILE_KEY]))
        n = len(self.proxy.records)
        with rs.aws_env():
            self.mount_and_check("s3://zarrfs/creds.zarr", self.opts() + ["credentials=" + creds],
                                 {"secret": S3_KEYS[FILE_KEY], "access key id": FILE_KEY,
                                  "URL-encoded secret": rs.aws_quote(S3_KEYS[FILE_KEY])},
                                 "cred-s3")
        self.assertEqual(self.signers(n), {FILE_KEY})

    def test_02_file_then_environment_then_profile(self):
        creds = secret_file("s3", "aws_access_key_id = %s\naws_secret_access_key = %s\n"
                            % (FILE_KEY, S3_KEYS[FILE_KEY]))
        env = {"AWS_ACCESS_KEY_ID": ENV_KEY, "AWS_SECRET_ACCESS_KEY": S3_KEYS[ENV_KEY]}
        for with_file, with_env, want in ((True, True, FILE_KEY), (False, True, ENV_KEY),
                                          (False, False, PROFILE_KEY)):
            with self.subTest(file=with_file, env=with_env):
                with rs.aws_env(**(env if with_env else {})) as home:
                    os.makedirs(os.path.join(home, ".aws"), exist_ok=True)
                    with open(os.path.join(home, ".aws", "credentials"), "w") as f:
                        f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n"
                                % (PROFILE_KEY, S3_KEYS[PROFILE_KEY]))
                    n = len(self.proxy.records)
                    opts = self.opts() + (["credentials=" + creds] if with_file else [])
                    with zfmount.Mount("s3://zarrfs/creds.zarr", options=opts,
                                       label="cred-s3-prec") as m:
                        self.assertBytesEqual(zfmount.read_all(m.path("a")),
                                              expected(STORE, "a"), "a")
                self.assertEqual(self.signers(n), {want})
        log("  s3: file > environment > profile, each signing alone")

    def test_03_http_only_file_leaves_s3_to_the_environment(self):
        """A file without S3 keys (only an HTTP token) is no S3 source: the environment's keys
        sign."""
        creds = secret_file("bearer-only", "bearer_token = %s\n" % TOKEN)
        n = len(self.proxy.records)
        with rs.aws_env(AWS_ACCESS_KEY_ID=ENV_KEY, AWS_SECRET_ACCESS_KEY=S3_KEYS[ENV_KEY]):
            with zfmount.Mount("s3://zarrfs/creds.zarr", label="cred-s3-env",
                               options=self.opts() + ["credentials=" + creds]) as m:
                self.assertBytesEqual(zfmount.read_all(m.path("g/b")), expected(STORE, "g/b"),
                                      "b")
        self.assertEqual(self.signers(n), {ENV_KEY})


class Refusals(zfmount.TestCase):
    SECRET = "zfRefused-Secret-Value"

    def expect(self, option, path, *needles, line=None):
        err = refused(self, STORE, [option + "=" + path], "-o %s: " % option.split("=")[0],
                      path, *needles)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertNotIn(self.SECRET, err)
        if line is not None:
            self.assertIn("line %d:" % line, err)
        log("  %-40s %s" % (os.path.basename(path) + ":", err.strip()))

    def good_text(self):
        return "http_user = u\nhttp_password = %s\n" % self.SECRET

    def test_01_credentials_file(self):
        for mode in (0o644, 0o640, 0o604):
            with self.subTest(mode=oct(mode)):
                self.expect("credentials", secret_file("mode", self.good_text(), mode),
                            "mode %04o" % mode, "chmod 600")
        other = secret_file("owner", self.good_text())
        os.chown(other, OTHER_UID, OTHER_UID)
        self.expect("credentials", other, "owned by uid %d" % OTHER_UID)
        d = os.path.join(WORK, "secrets", "a-directory")
        os.makedirs(d, mode=0o700, exist_ok=True)
        self.expect("credentials", d, "a directory")
        self.expect("credentials", os.path.join(WORK, "secrets", "missing"), "No such file")
        self.expect("credentials", secret_file("malformed", "# ok\nhttp_user = u\n%s\n"
                                               % self.SECRET), "expected KEY = VALUE", line=3)
        self.expect("credentials", secret_file("unknown", "http_user = u\nhttp_pass = %s\n"
                                               % self.SECRET), 'unknown key "http_pass"', line=2)
        self.expect("credentials", secret_file("half", "http_password = %s\n" % self.SECRET),
                    "http_password without http_user")

    def test_02_netrc_file(self):
        text = "machine 127.0.0.1 login u password %s\n" % self.SECRET
        self.expect("netrc", secret_file("netrc-mode", text, 0o644), "mode 0644")
        other = secret_file("netrc-owner", text)
        os.chown(other, OTHER_UID, OTHER_UID)
        self.expect("netrc", other, "owned by uid %d" % OTHER_UID)
        self.expect("netrc", os.path.join(WORK, "secrets", "no-netrc"), "No such file")
        home = tempfile.mkdtemp(dir=WORK, prefix="home-empty-")
        saved = os.environ.get("HOME")
        os.environ["HOME"] = home
        try:                                   # -o netrc without ~/.netrc
            err = refused(self, STORE, ["netrc"], "-o netrc: ", os.path.join(home, ".netrc"))
            self.assertEqual(len(err.strip().splitlines()), 1, err)
        finally:
            os.environ["HOME"] = saved if saved is not None else "/root"


if __name__ == "__main__":
    zfmount.main(file_timeout=570)
