#!/usr/bin/python3
"""zarrfs run the way file-system daemons are run: the man page, --help, the systemd units,
`meson install`, and mounting through mount(8), mount.fuse3(8) and an fstab file.

* man page: `groff -man -ww` prints no warning, `man -l` renders every section, and it names
  every option of the `zf_opts` table in src/fuse/main.c (parsed from the C source), as
  `zarrfs --help` must too, with its default.
* units (contrib/systemd): `systemd-analyze verify` prints nothing; `systemd-analyze security
  --offline` keeps the exposure of zarrfs@.service at most MAX_EXPOSURE. The machine's PID 1 is
  not systemd: verify works offline on unit files, and it refuses an ExecStart binary that does
  not exist, so the copies verified name the built binary instead of /usr/bin/zarrfs (the same
  substitution `meson install` makes for its bindir); the unchanged files are verified too, where
  the missing /usr/bin/zarrfs is the only complaint allowed.
* the template's command lines, as systemd expands them (specifiers %i/%f resolved by systemd
  itself: the `systemd-analyze verify` debug dump of an instance), run with the environment file
  and a NOTIFY_SOCKET, for a mount point with a space and a dash: READY=1 comes from the main
  pid once the mount is up, SIGTERM/SIGINT/SIGHUP unmount with exit status 0, and after a crash
  (SIGKILL) the ExecStartPre lines clear the dead mount so that a restart mounts again.
* `meson install --destdir` puts the binary, the man page, the unit (ExecStart = bindir) and the
  examples where they belong.
* mount(8) clears PATH before it runs mount.fuse3, whose /bin/sh then finds `zarrfs` only in the
  shell's default PATH. So this file re-executes itself in a private mount namespace
  (`unshare --mount`) and bind-mounts over /usr/local/sbin, inside that namespace only, a
  directory holding `zarrfs`: a wrapper that records its argv and execs the built binary. Every
  mount made here lives in that namespace and is unmounted by the test; the host sees none.
"""

import errno
import json
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True          # keep the source tree free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zfmount  # noqa: E402
import remote_servers as rs  # noqa: E402
from zfmount import log  # noqa: E402

REPO = zfmount.REPO
MAN = os.path.join(REPO, "docs", "zarrfs.1")
UNITS = os.path.join(REPO, "contrib", "systemd")
MAIN_C = os.path.join(REPO, "src", "fuse", "main.c")
ZARRFS = os.path.abspath(zfmount.ZARRFS)
NS_FLAG = "ZARRFS_SERVICE_TEST_NS"
SHELL_PATH_DIR = "/usr/local/sbin"      # first directory of dash's default PATH
SYSTEMD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MAX_EXPOSURE = 6.0
MAN_SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "STORES", "OPTIONS", "THE FILE-SYSTEM VIEW",
                "EXTENDED ATTRIBUTES", "STATISTICS", "ERRORS", "SIGNALS", "EXAMPLES", "FSTAB",
                "SYSTEMD", "FILES", "SEE ALSO"]
UNIT_FILES = ["zarrfs@.service", "mnt-zarr.mount", "mnt-zarr.automount"]

WORK = None         # temp dir of this run
STORE = None        # a small v2 store
WANT = None         # {name: expected bytes}
ARGV_LOG = None     # where the wrapper records the argv zarrfs received


# --------------------------------------------------------------------------------------------
# helpers

def make_store(path):
    import numcodecs
    import numpy as np
    import zarr
    g = zarr.open_group(path, mode="w")
    a = g.create_dataset("a", shape=(64, 50), chunks=(16, 16), dtype="<i4",
                         compressor=numcodecs.Zlib(1), fill_value=-1)
    a[...] = np.arange(64 * 50, dtype="<i4").reshape(64, 50) * 7
    b = g.create_group("sub").create_dataset("b", shape=(300,), chunks=(64,), dtype=">f8",
                                             compressor=numcodecs.Blosc("lz4", 5, 1))
    b[...] = np.linspace(-1, 1, 300)
    return {"a": zfmount.expected_bytes(zarr.open_array(os.path.join(path, "a"), mode="r")),
            "sub/b": zfmount.expected_bytes(zarr.open_array(os.path.join(path, "sub", "b"),
                                                            mode="r"))}


def zf_opts_entries():
    """The option templates of the zf_opts table in src/fuse/main.c ("cache_size=%s", "-V"...)."""
    with open(MAIN_C) as f:
        src = f.read()
    m = re.search(r"zf_opts\[\]\s*=\s*\{(.*?)FUSE_OPT_END", src, re.S)
    if not m:
        raise AssertionError("no zf_opts table in %s" % MAIN_C)
    opts = re.findall(r'ZF_OPT\(\s*"([^"]+)"', m.group(1))
    if not opts:
        raise AssertionError("no ZF_OPT(\"...\") entries in zf_opts of %s" % MAIN_C)
    return opts


def option_name(template):
    """"cache_size=%s" -> "cache_size=", "--version" -> "--version"."""
    return template.split("=", 1)[0] + "=" if "=" in template else template


def mentions(text, name):
    """name appears as an option (not inside a longer word) in text."""
    if name.endswith("="):
        return re.search(r"(?<![\w-])" + re.escape(name), text) is not None
    return re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", text) is not None


def roff_text(path):
    """The man page source with escapes for hyphens and fonts undone (for plain searching)."""
    with open(path) as f:
        s = f.read()
    s = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", s)
    return s.replace("\\-", "-").replace("\\&", "").replace("\\c\n", "")


def proc_mounts(mnt):
    """[(source, fstype, options)] of /proc/self/mounts entries at mnt (escapes undone)."""
    mnt = os.path.realpath(mnt)
    out = []
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 4 and zfmount._unescape_mountinfo(fields[1]) == mnt:
                out.append((zfmount._unescape_mountinfo(fields[0]), fields[2], fields[3]))
    return out


def zarrfs_pids(mnt):
    """Pids of zarrfs daemons with mnt among their arguments."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) == b"zarrfs" and mnt.encode() in argv:
            pids.append(int(d))
    return pids


def wait_until(pred, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def read_argv_log():
    try:
        with open(ARGV_LOG, "rb") as f:
            data = f.read()
    except OSError:
        return None
    return [a.decode() for a in data.split(b"\0")[:-1]]


def systemd_analyze(args, timeout=60, env_extra=None):
    env = dict(os.environ)
    env["SYSTEMD_LOG_LEVEL"] = "info"
    env["SYSTEMD_PAGER"] = "cat"
    env["SYSTEMD_COLORS"] = "0"
    env.update(env_extra or {})
    return subprocess.run(["systemd-analyze"] + args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env=env)


def verify(path):
    """(status, output) of `systemd-analyze verify` on one unit file (an instance name of a
    template in the same directory works too)."""
    r = systemd_analyze(["verify", "--man=no", "--generators=no", path])
    return r.returncode, (r.stdout + r.stderr).strip()


def unit_copy(dirname, unit, binary=ZARRFS, envdir=None):
    """Copy contrib/systemd/UNIT into dirname; /usr/bin/zarrfs becomes `binary`, and the
    environment files move from /etc/zarrfs to envdir when given."""
    with open(os.path.join(UNITS, unit)) as f:
        text = f.read()
    text = text.replace("/usr/bin/zarrfs", binary)
    if envdir:
        text = text.replace("EnvironmentFile=/etc/zarrfs/", "EnvironmentFile=%s/" % envdir)
    dst = os.path.join(dirname, unit)
    with open(dst, "w") as f:
        f.write(text)
    return dst


def split_dump_command(line):
    """Words of a "Command Line:" of systemd's dump: words are separated by spaces; a word with
    special characters is in double quotes, where \\, \", \$ and \` stand for the character."""
    words, cur, inword, i = [], [], False, 0
    while i < len(line):
        c = line[i]
        if c == " " and not inword:
            i += 1
            continue
        if c == '"':
            inword = True
            i += 1
            while i < len(line) and line[i] != '"':
                if line[i] == "\\" and i + 1 < len(line) and line[i + 1] in '\\"$`':
                    i += 1
                cur.append(line[i])
                i += 1
            i += 1
            continue
        if c == " ":
            words.append("".join(cur))
            cur, inword = [], False
        else:
            cur.append(c)
            inword = True
        i += 1
    if inword:
        words.append("".join(cur))
    return words


def unit_dump(path):
    """systemd's own reading of a unit: {key: [values]} and {"ExecStart": [[argv]], ...} from
    the debug dump of `systemd-analyze verify` (specifiers such as %i and %f resolved)."""
    r = systemd_analyze(["verify", "--man=no", "--generators=no", path],
                        env_extra={"SYSTEMD_LOG_LEVEL": "debug"})
    name = os.path.basename(path)
    lines = r.stdout.splitlines()
    try:
        start = lines.index("\t-> Unit %s:" % name)
    except ValueError:
        raise AssertionError("no dump of %s in systemd-analyze's output (status %d): %s"
                             % (name, r.returncode, r.stderr[-2000:]))
    props, execs, cur = {}, {}, None
    for line in lines[start + 1:]:
        if line.startswith("\t-> ") or not line.startswith("\t\t"):
            break
        body = line[2:]
        if body.startswith("-> Exec") and body.endswith(":"):
            cur = body[3:-1]
            execs[cur] = []
        elif body.startswith("\tCommand Line: ") and cur:
            execs[cur].append(split_dump_command(body[len("\tCommand Line: "):]))
        elif ": " in body and not body.startswith("\t"):
            cur = None
            k, v = body.split(": ", 1)
            props.setdefault(k, []).append(re.sub(r"\s+\(origin-[^)]*\)$", "", v))
    return props, execs


def unit_exec_flags(unit, key):
    """[ignore_failure] of each KEY= line of contrib/systemd/UNIT, in order."""
    flags = []
    with open(os.path.join(UNITS, unit)) as f:
        for line in f:
            if line.startswith(key + "="):
                flags.append(line[len(key) + 1:].lstrip().startswith("-"))
    return flags


def parse_env_file(path):
    """KEY=VALUE lines as systemd's EnvironmentFile= reads the simple cases."""
    env = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            k, _, v = line.partition("=")
            v = v.strip()
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
                v = v[1:-1]
            env[k.strip()] = v
    return env


def expand_exec(argv, env):
    """systemd's expansion of a command line at exec time: a word "$VAR" becomes the value split
    at whitespace (no word when empty), "${VAR}" the value within a word, "$$" a dollar."""
    out = []
    for w in argv:
        m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", w)
        if m:
            out += env.get(m.group(1), "").split()
            continue
        out.append(re.sub(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}",
                          lambda x: "$" if x.group(0) == "$$" else env.get(x.group(1), ""), w))
    return out


def service_env(unit_env, notify=None):
    """The environment systemd gives a service: its default PATH, the unit's variables and, for
    sanitizer builds, the sanitizer settings of this test run."""
    env = {"PATH": SYSTEMD_PATH, "LANG": "C.UTF-8"}
    env.update({k: v for k, v in os.environ.items()
                if k.startswith(("ASAN_", "UBSAN_", "LSAN_"))})
    env.update(unit_env)
    if notify:
        env["NOTIFY_SOCKET"] = notify
    return env


class UnitRun(zfmount.Mount):
    """A zarrfs started from a unit's expanded ExecStart (in the foreground, as with -f), under
    the harness's watchdogs and cleanup: stop() unmounts and reaps it."""

    def __init__(self, argv, env, mnt, label):
        super().__init__(store=None, mnt=mnt, label=label)
        self._own_mnt = False
        self.argv = argv
        self.env = env

    def command(self):
        return self.argv

    def start(self):
        self.errfile = tempfile.NamedTemporaryFile(prefix="zarrfs-stderr-", delete=False)
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self.errfile,
                                     stderr=self.errfile, env=self.env, start_new_session=True)
        with zfmount._active_lock:
            zfmount._active.append(self)
        return self


class BgMount:
    """A mount made through mount(8)/mount.fuse3, whose daemon is not our child. Registered with
    the harness so that its watchdogs and exit handler unmount it and kill the daemon."""

    def __init__(self, mnt, label):
        self.mnt = mnt
        self.label = label
        self.pid = None
        self.killed_by_watchdog = False
        with zfmount._active_lock:
            zfmount._active.append(self)

    def kill_for_watchdog(self):
        self.killed_by_watchdog = True
        for p in zarrfs_pids(self.mnt):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop(self, failed=False):
        how = zfmount.unmount_path(self.mnt)
        if not wait_until(lambda: not zarrfs_pids(self.mnt), 10):
            log("  [service] zarrfs still running 10 s after unmounting %s: SIGKILL" % self.mnt)
            self.kill_for_watchdog()
        with zfmount._active_lock:
            if self in zfmount._active:
                zfmount._active.remove(self)
        return None, how


class NotifySocket:
    """The socket systemd listens on for sd_notify(3) datagrams, with the sender's credentials."""

    def __init__(self, dirname):
        self.path = os.path.join(dirname, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)

    def wait_for(self, key, timeout, on_message=None):
        """Wait for a datagram holding KEY (e.g. "READY=1"); returns (sender pid, when) or None.
        on_message(fields, pid) is called for each datagram as it arrives."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data, anc, _flags, _addr = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
            except socket.timeout:
                break
            pid = None
            for level, typ, cdata in anc:
                if level == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS:
                    pid = struct.unpack("iII", cdata[:12])[0]
            fields = data.decode("utf-8", "replace").split("\n")
            if on_message:
                on_message(fields, pid)
            if key in fields:
                return pid, time.monotonic()
        return None

    def close(self):
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


def setUpModule():
    global WORK, STORE, WANT, ARGV_LOG
    WORK = tempfile.mkdtemp(prefix="zarrfs-itest-service-")
    STORE = os.path.join(WORK, "store.zarr")
    WANT = make_store(STORE)
    # `zarrfs` where mount.fuse3's shell looks first, in this mount namespace only
    bindir = os.path.join(WORK, "sbin")
    os.mkdir(bindir)
    ARGV_LOG = os.path.join(WORK, "argv.log")
    wrapper = os.path.join(bindir, "zarrfs")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\n# records the arguments mount.fuse3 passes, then runs the build\n"
                "printf '%%s\\0' \"$@\" > %s\nexec %s \"$@\"\n"
                % (shlex.quote(ARGV_LOG), shlex.quote(ZARRFS)))
    os.chmod(wrapper, 0o755)
    r = zfmount.run(["mount", "--bind", bindir, SHELL_PATH_DIR])
    if r.returncode != 0:
        raise RuntimeError("mount --bind %s %s: %s" % (bindir, SHELL_PATH_DIR, r.stderr))


def tearDownModule():
    if os.environ.get(NS_FLAG) == "1" and zfmount.anything_mounted_at(SHELL_PATH_DIR):
        zfmount.run(["umount", SHELL_PATH_DIR])
    if WORK and not any(mp.startswith(WORK) for mp, _f, _s in zfmount.mount_entries()):
        shutil.rmtree(WORK, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# the man page and --help

class ManPageAndHelp(zfmount.TestCase):

    def test_01_groff_no_warnings(self):
        """groff -man -ww renders the page (utf8 and ascii) without a single warning; a page with
        a typo'd macro does warn (so the check can fail)."""
        for dev in ("utf8", "ascii"):
            r = zfmount.run(["groff", "-man", "-ww", "-T" + dev, MAN])
            self.assertEqual(r.returncode, 0, "groff -T%s: status %d: %s" % (dev, r.returncode,
                                                                              r.stderr))
            self.assertEqual(r.stderr.strip(), "", "groff -man -ww -T%s warns:\n%s" % (dev,
                                                                                      r.stderr))
            self.assertGreater(len(r.stdout.splitlines()), 200, "groff -T%s: output too short"
                               % dev)
        bad = os.path.join(WORK, "bad.1")
        with open(MAN) as f:
            text = f.read()
        with open(bad, "w") as f:
            f.write(text.replace(".SH STORES\n", ".SH STORES\n.BX typo\n\\fQoops\\fP\n", 1))
        r = zfmount.run(["groff", "-man", "-ww", "-Tutf8", bad])
        self.assertTrue(r.stderr.strip(), "groff -ww did not warn about a broken page")
        log("  groff -ww: no warnings (utf8, ascii); a broken copy warns: %s"
            % r.stderr.strip().splitlines()[0])

    def test_02_man_renders_every_section(self):
        """man -l renders the page with every section the manual promises, in order."""
        env = dict(os.environ, MANWIDTH="100", MAN_KEEP_FORMATTING="0", MANPAGER="cat",
                   PAGER="cat")
        r = zfmount.run(["man", "-l", MAN], env=env, timeout=60)
        self.assertEqual(r.returncode, 0, "man -l: status %d: %s" % (r.returncode, r.stderr))
        self.assertEqual(r.stderr.strip(), "", "man -l printed on stderr: %s" % r.stderr)
        out = re.sub(r".\x08", "", r.stdout)          # overstrikes, should the pager keep them
        heads = [l.strip() for l in out.splitlines() if l and not l[0].isspace()]
        pos = -1
        for sec in MAN_SECTIONS:
            self.assertIn(sec, heads, "man -l: no section %s (headings: %s)" % (sec, heads))
            self.assertGreater(heads.index(sec), pos, "section %s out of order" % sec)
            pos = heads.index(sec)
        self.assertRegex(heads[0], r"^ZARRFS\(1\)")
        with open(os.path.join(REPO, "meson.build")) as f:
            version = re.search(r"version\s*:\s*'([^']+)'", f.read()).group(1)
        self.assertIn("zarrfs %s" % version, heads[-1], "the page's .TH names another version "
                      "than meson.build's %s" % version)
        log("  man -l: %d lines, sections %s" % (len(out.splitlines()), ", ".join(MAN_SECTIONS)))

    def test_03_help_lists_every_option_with_default(self):
        """Every ZF_OPT of zf_opts (src/fuse/main.c) is in `zarrfs --help` before the FUSE
        options; each -o NAME=VALUE option's entry says its default."""
        opts = zf_opts_entries()
        r = zfmount.run([ZARRFS, "--help"])
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        fuse_at = out.find("FUSE options")
        self.assertGreater(fuse_at, 0, "--help has no 'FUSE options' part")
        own = out[:fuse_at]
        lines = own.splitlines()
        for t in opts:
            name = option_name(t)
            with self.subTest(option=t):
                self.assertTrue(mentions(own, name), "--help does not list %s before the FUSE "
                                "options:\n%s" % (name, own))
                if not name.endswith("="):
                    continue
                i = next(k for k, l in enumerate(lines) if mentions(l, name))
                block = [lines[i]]
                for l in lines[i + 1:]:     # continuation lines: indented, not a new option
                    if not l.strip() or l.lstrip().startswith("-"):
                        break
                    block.append(l)
                self.assertIn("default", " ".join(block).lower(),
                              "--help: %s has no default:\n%s" % (name, "\n".join(block)))
        log("  --help lists %s, each -o option with its default" % ", ".join(opts))

    def test_04_man_names_every_option(self):
        """The man page documents every ZF_OPT of zf_opts, the -o options with a default, and
        the default cache size is main.c's DEFAULT_CACHE_SIZE."""
        text = roff_text(MAN)
        opts = zf_opts_entries()
        for t in opts:
            name = option_name(t)
            with self.subTest(option=t):
                self.assertTrue(mentions(text, name), "docs/zarrfs.1 does not mention %s" % name)
        with open(MAIN_C) as f:
            m = re.search(r'#define\s+DEFAULT_CACHE_SIZE\s+"([^"]+)"', f.read())
        self.assertIsNotNone(m, "no DEFAULT_CACHE_SIZE in main.c")
        entry = text[text.find("cache_size="):]
        entry = entry[:entry.find("\n.TP")]
        self.assertIn("Default:", entry)
        self.assertIn(m.group(1), entry, "man page: cache_size default is not %s" % m.group(1))
        for name in (option_name(t) for t in opts if "=" in t):
            i = text.find(name)
            entry = text[i:text.find("\n.TP", i)]
            self.assertIn("Default", entry, "man page: %s has no default" % name)
        log("  docs/zarrfs.1 documents %s; cache_size default %s" % (", ".join(opts), m.group(1)))


# --------------------------------------------------------------------------------------------
# the units

class Units(zfmount.TestCase):

    def test_01_verify_each_unit(self):
        """systemd-analyze verify: no output at all for each unit (the template as itself and as
        an instance), naming the built binary; the unchanged files complain only about a missing
        /usr/bin/zarrfs; broken copies are caught."""
        d = tempfile.mkdtemp(dir=WORK, prefix="units-")
        for u in UNIT_FILES:
            unit_copy(d, u)
        for name in UNIT_FILES + ["zarrfs@mnt-data.service"]:
            with self.subTest(unit=name):
                st, out = verify(os.path.join(d, name))
                self.assertEqual((st, out), (0, ""), "systemd-analyze verify %s" % name)
        # the files as shipped
        d2 = tempfile.mkdtemp(dir=WORK, prefix="units-asis-")
        for u in UNIT_FILES:
            shutil.copy(os.path.join(UNITS, u), d2)
        allowed = re.compile(r"Command /usr/bin/zarrfs is not executable")
        for name in UNIT_FILES + ["zarrfs@mnt-data.service"]:
            with self.subTest(unit=name, asis=True):
                _st, out = verify(os.path.join(d2, name))
                rest = [l for l in out.splitlines() if not allowed.search(l)]
                self.assertEqual(rest, [], "systemd-analyze verify %s (as shipped)" % name)
        # the check can fail: an unknown key, a mount unit named after another path
        d3 = tempfile.mkdtemp(dir=WORK, prefix="units-bad-")
        with open(os.path.join(UNITS, "zarrfs@.service")) as f:
            svc = f.read()
        with open(os.path.join(d3, "zarrfs@.service"), "w") as f:
            f.write(svc.replace("/usr/bin/zarrfs", ZARRFS).replace("[Service]",
                                                                   "[Service]\nRestrat=always"))
        st, out = verify(os.path.join(d3, "zarrfs@mnt-data.service"))
        self.assertIn("Restrat", out, "verify did not report an unknown key")
        shutil.copy(os.path.join(UNITS, "mnt-zarr.mount"), os.path.join(d3, "mnt-other.mount"))
        st, out = verify(os.path.join(d3, "mnt-other.mount"))
        self.assertTrue(st != 0 or out, "verify accepted a mount unit not named after Where=")
        log("  verify: %s clean; as shipped only the missing /usr/bin/zarrfs; broken copies "
            "caught" % ", ".join(UNIT_FILES))

    def test_02_service_as_systemd_reads_it(self):
        """systemd's reading of zarrfs@mnt-data.service: Type=notify, Restart=on-failure,
        KillSignal=SIGTERM and no ExecStop, the environment file of the instance, and
        ExecStart `zarrfs -f $OPTIONS ${STORE} /mnt/data`."""
        d = tempfile.mkdtemp(dir=WORK, prefix="units-read-")
        unit_copy(d, "zarrfs@.service")
        props, execs = unit_dump(os.path.join(d, "zarrfs@mnt-data.service"))
        self.assertEqual(props.get("Type"), ["notify"])
        self.assertEqual(props.get("NotifyAccess"), ["main"])
        self.assertEqual(props.get("Restart"), ["on-failure"])
        self.assertEqual(props.get("KillSignal"), ["SIGTERM"])
        self.assertEqual(props.get("EnvironmentFile"), ["/etc/zarrfs/mnt-data.conf"])
        self.assertIn("network-online.target", props.get("After", []))
        self.assertIn("/mnt/data", " ".join(props.get("RequiresMountsFor", [])))
        self.assertEqual(execs.get("ExecStart"), [[ZARRFS, "-f", "$OPTIONS", "${STORE}",
                                                   "/mnt/data"]])
        self.assertNotIn("ExecStop", execs)
        for key in ("PrivateTmp", "PrivateDevices", "ProtectSystem", "ProtectHome",
                    "ProtectKernelTunables", "ProtectControlGroups", "PrivateUsers",
                    "MountAPIVFS"):
            with self.subTest(key=key):   # each would hide the FUSE mount in a namespace
                self.assertEqual(props.get(key), ["no"], "%s=%s" % (key, props.get(key)))
        caps = props.get("CapabilityBoundingSet", [""])[0].split()
        self.assertIn("cap_sys_admin", caps)
        self.assertIn("/dev/fuse rw", props.get("DeviceAllow", []))
        # the mount unit: what systemd will pass to mount(8)
        unit_copy(d, "mnt-zarr.mount")
        mprops, _ = unit_dump(os.path.join(d, "mnt-zarr.mount"))
        self.assertEqual(mprops.get("What"), ["/srv/data/example.zarr"])
        self.assertEqual(mprops.get("Where"), ["/mnt/zarr"])
        self.assertEqual(mprops.get("File System Type"), ["fuse.zarrfs"])
        self.assertEqual(mprops.get("Options"), ["ro,allow_other"])
        unit_copy(d, "mnt-zarr.automount")
        aprops, _ = unit_dump(os.path.join(d, "mnt-zarr.automount"))
        self.assertEqual(aprops.get("Where"), ["/mnt/zarr"])
        log("  zarrfs@mnt-data.service: %s; mnt-zarr.mount: %s %s %s %s"
            % (" ".join(execs["ExecStart"][0]), mprops["What"][0], mprops["Where"][0],
               mprops["File System Type"][0], mprops["Options"][0]))

    def test_03_security_exposure(self):
        """systemd-analyze security --offline rates zarrfs@.service at most MAX_EXPOSURE."""
        d = tempfile.mkdtemp(dir=WORK, prefix="units-sec-")
        unit_copy(d, "zarrfs@.service")
        shutil.copy(os.path.join(d, "zarrfs@.service"), os.path.join(d, "zarrfs@mnt-data.service"))
        r = systemd_analyze(["security", "--offline=true", "--man=no", "--no-pager",
                             os.path.join(d, "zarrfs@mnt-data.service")])
        m = re.search(r"Overall exposure level for \S+: ([\d.]+)", r.stdout + r.stderr)
        self.assertIsNotNone(m, "no exposure level in: %s" % (r.stdout + r.stderr)[-2000:])
        self.assertLessEqual(float(m.group(1)), MAX_EXPOSURE,
                             "exposure %s > %s: hardening removed?" % (m.group(1), MAX_EXPOSURE))
        log("  systemd-analyze security --offline: exposure %s (at most %s)"
            % (m.group(1), MAX_EXPOSURE))

    def test_04_example_env_file(self):
        """zarrfs@.conf.example sets STORE and OPTIONS, and those OPTIONS mount."""
        env = parse_env_file(os.path.join(UNITS, "zarrfs@.conf.example"))
        self.assertEqual(sorted(env), ["OPTIONS", "STORE"])
        self.assertTrue(env["STORE"].startswith("/"))
        opts = env["OPTIONS"].split()
        self.assertEqual(opts[0], "-o")
        with zfmount.Mount(STORE, args=opts, label="conf-example") as m:
            self.assertBytesEqual(zfmount.read_all(m.path("a")), WANT["a"], "a")
        log("  example env file: STORE=%s OPTIONS=%s (mounts)" % (env["STORE"], env["OPTIONS"]))


class ServiceCommands(zfmount.TestCase):
    """The template's command lines run as systemd would run them."""

    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(dir=WORK, prefix="svc-")
        # a mount point with a dash and a space, not there yet: ExecStartPre makes it
        self.mnt = os.path.join(self.dir, "my data-1")
        r = zfmount.run(["systemd-escape", "--path", self.mnt])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.instance = r.stdout.strip()
        self.assertIn("\\x2d", self.instance)
        envdir = os.path.join(self.dir, "etc")
        os.mkdir(envdir)
        unit_copy(self.dir, "zarrfs@.service", envdir=envdir)
        props, execs = unit_dump(os.path.join(self.dir, "zarrfs@%s.service" % self.instance))
        envfile = props.get("EnvironmentFile", [""])[0]
        self.assertEqual(envfile, os.path.join(envdir, self.instance + ".conf"),
                         "EnvironmentFile is not the instance's file")
        with open(envfile, "w") as f:
            f.write("STORE=%s\nOPTIONS=-o cache_size=8M,threads=2\n" % STORE)
        self.env = {}
        for assignment in props.get("Environment", []):
            for a in shlex.split(assignment):
                k, _, v = a.partition("=")
                self.env[k] = v
        self.env.update(parse_env_file(envfile))
        self.pre = execs.get("ExecStartPre", [])
        self.pre_ignore = unit_exec_flags("zarrfs@.service", "ExecStartPre")
        self.assertEqual(len(self.pre), len(self.pre_ignore))
        self.start_argv = expand_exec(execs["ExecStart"][0], self.env)
        self.assertEqual(self.start_argv, [ZARRFS, "-f", "-o", "cache_size=8M,threads=2", STORE,
                                           self.mnt])
        self.notify = NotifySocket(self.dir)

    def tearDown(self):
        self.notify.close()
        for p in zarrfs_pids(self.mnt):
            os.kill(p, signal.SIGKILL)
        zfmount.unmount_path(self.mnt)
        super().tearDown()

    def run_pre(self):
        for argv, ignore in zip(self.pre, self.pre_ignore):
            r = zfmount.run(expand_exec(argv, self.env), env=service_env(self.env))
            if not ignore:
                self.assertEqual(r.returncode, 0, "ExecStartPre %r: %s" % (argv, r.stderr))

    def start(self, label):
        """ExecStart, then wait for READY=1: it must come from the main pid, with the file
        system already mounted. Returns the UnitRun."""
        u = UnitRun(self.start_argv, service_env(self.env, self.notify.path), self.mnt, label)
        u.start()
        seen = {}

        def on_message(fields, pid):
            if "READY=1" in fields:
                seen["mounted"] = zfmount.fuse_mounted_at(self.mnt)
                seen["pid"] = pid
        got = self.notify.wait_for("READY=1", zfmount.MOUNT_TIMEOUT, on_message)
        if got is None:
            u.stop(failed=True)
            self.fail("no READY=1 on $NOTIFY_SOCKET within %.0f s (daemon %s)"
                      % (zfmount.MOUNT_TIMEOUT, "alive" if u.alive() else
                         "exited %s" % u.proc.returncode))
        self.assertEqual(seen["pid"], u.pid, "READY=1 not sent by the main pid")
        self.assertEqual(seen["mounted"], "fuse.zarrfs", "READY=1 sent before the mount was up")
        return u

    def check_reads(self):
        self.assertEqual(proc_mounts(self.mnt)[-1][:2], (STORE, "fuse.zarrfs"))
        for name, want in WANT.items():
            self.assertBytesEqual(zfmount.read_all(os.path.join(self.mnt, name)), want, name)

    def test_01_notify_and_signals(self):
        """ExecStartPre creates the mount point; ExecStart mounts and sends READY=1; each of
        SIGTERM, SIGINT, SIGHUP unmounts with exit status 0 (what `systemctl stop` relies on)."""
        self.assertFalse(os.path.exists(self.mnt))
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with self.subTest(signal=sig.name):
                self.run_pre()
                self.assertTrue(os.path.isdir(self.mnt), "ExecStartPre did not create %s"
                                % self.mnt)
                u = self.start("svc-" + sig.name)
                try:
                    self.check_reads()
                    os.kill(u.pid, sig)
                    try:
                        status = u.proc.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        status = "still running 10 s after %s" % sig.name
                    stopping = self.notify.wait_for("STOPPING=1", 0.5)
                    self.assertEqual(status, 0, "exit status after %s" % sig.name)
                    self.assertFalse(zfmount.anything_mounted_at(self.mnt),
                                     "still mounted after %s" % sig.name)
                finally:
                    u.stop(failed=False)
                log("  %s: READY=1 from pid %d once mounted; exit 0, unmounted%s"
                    % (sig.name, u.pid, "; STOPPING=1 sent" if stopping else ""))

    def test_02_restart_after_crash(self):
        """After SIGKILL the mount is dead (ENOTCONN); ExecStartPre detaches it and ExecStart
        mounts again (Restart=on-failure). A live mount is left alone by ExecStartPre."""
        self.run_pre()
        u = self.start("svc-crash")
        try:
            self.check_reads()
            u.kill_for_watchdog()               # SIGKILL: what a crash leaves behind
            u.proc.wait(timeout=10)
            self.assertEqual(zfmount.fuse_mounted_at(self.mnt), "fuse.zarrfs")
            with self.assertRaises(OSError) as cm:
                os.statvfs(self.mnt)            # statfs always asks the (dead) daemon
            self.assertEqual(cm.exception.errno, errno.ENOTCONN)
            self.run_pre()
            self.assertFalse(zfmount.anything_mounted_at(self.mnt),
                             "ExecStartPre left the dead mount")
        finally:
            u.stop(failed=False)
        u = self.start("svc-restart")
        try:
            self.check_reads()
            self.run_pre()                      # a live mount: untouched
            self.assertEqual(zfmount.fuse_mounted_at(self.mnt), "fuse.zarrfs")
            self.check_reads()
            os.kill(u.pid, signal.SIGTERM)
            self.assertEqual(u.proc.wait(timeout=10), 0)
        finally:
            u.stop(failed=False)
        log("  dead mount after SIGKILL cleared by ExecStartPre; restart mounted and read; "
            "a live mount survives ExecStartPre")


# --------------------------------------------------------------------------------------------
# meson install

class MesonInstall(zfmount.TestCase):
    test_timeout = 300

    def build_root(self):
        d = os.path.dirname(ZARRFS)
        while d != "/":
            if os.path.isdir(os.path.join(d, "meson-private")):
                return d
            d = os.path.dirname(d)
        self.fail("no meson build directory above %s" % ZARRFS)

    def test_01_destdir_layout(self):
        """meson install --destdir: zarrfs in bindir, the man page in mandir/man1, the unit in
        the systemd unit directory with ExecStart naming bindir/zarrfs (and verifying clean),
        the examples in datadir/doc/zarrfs/examples."""
        meson = shutil.which("meson")
        self.assertIsNotNone(meson, "meson not on PATH")
        build = self.build_root()
        r = zfmount.run([meson, "introspect", "--buildoptions", build], timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        o = {x["name"]: x["value"] for x in json.loads(r.stdout)}
        prefix = o["prefix"]

        def at(sub):
            return os.path.join(prefix, sub)
        bindir, mandir, datadir = at(o["bindir"]), at(o["mandir"]), at(o["datadir"])
        unitdir = os.path.join(prefix, "lib", "systemd", "system")
        if prefix == "/usr":
            p = zfmount.run(["pkg-config", "--variable=systemdsystemunitdir", "systemd"])
            if p.returncode == 0 and p.stdout.strip():
                unitdir = p.stdout.strip()
        dest = tempfile.mkdtemp(dir=WORK, prefix="destdir-")
        r = zfmount.run([meson, "install", "-C", build, "--destdir", dest, "--no-rebuild"],
                        timeout=120)
        self.assertEqual(r.returncode, 0, "meson install: %s%s" % (r.stdout[-2000:], r.stderr))

        def D(path):
            return os.path.join(dest, path.lstrip("/"))
        exe = D(os.path.join(bindir, "zarrfs"))
        self.assertTrue(os.access(exe, os.X_OK), "no executable %s" % exe)
        man = D(os.path.join(mandir, "man1", "zarrfs.1"))
        with open(man, "rb") as f, open(MAN, "rb") as g:
            self.assertEqual(f.read(), g.read(), "installed man page differs from docs/zarrfs.1")
        unit = D(os.path.join(unitdir, "zarrfs@.service"))
        self.assertTrue(os.path.isfile(unit), "no %s" % unit)
        with open(unit) as f:
            text = f.read()
        self.assertIn("ExecStart=%s -f $OPTIONS ${STORE} %%f\n" % os.path.join(bindir, "zarrfs"),
                      text)
        with open(os.path.join(UNITS, "zarrfs@.service")) as f:
            self.assertEqual(text, f.read().replace("/usr/bin/zarrfs",
                                                    os.path.join(bindir, "zarrfs")))
        vdir = tempfile.mkdtemp(dir=WORK, prefix="installed-unit-")
        with open(os.path.join(vdir, "zarrfs@.service"), "w") as f:
            f.write(text.replace(os.path.join(bindir, "zarrfs"), exe))   # the installed binary
        st, out = verify(os.path.join(vdir, "zarrfs@mnt-data.service"))
        self.assertEqual((st, out), (0, ""), "installed unit does not verify")
        examples = D(os.path.join(datadir, "doc", "zarrfs", "examples"))
        for name in ("mnt-zarr.mount", "mnt-zarr.automount", "zarrfs@.conf.example",
                     "README.md"):
            with self.subTest(example=name):
                with open(os.path.join(examples, name), "rb") as f, \
                        open(os.path.join(UNITS, name), "rb") as g:
                    self.assertEqual(f.read(), g.read(), name)
        tree = sorted(os.path.relpath(os.path.join(dp, fn), dest)
                      for dp, _dn, fns in os.walk(dest) for fn in fns)
        r = zfmount.run(["man", "-l", man], env=dict(os.environ, MANPAGER="cat", PAGER="cat"),
                        timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        log("  meson install --destdir (prefix %s):\n    %s" % (prefix, "\n    ".join(tree)))


# --------------------------------------------------------------------------------------------
# mount(8), mount.fuse3, fstab

class MountHelper(zfmount.TestCase):
    """Mounts through mount(8) and mount.fuse3 with the wrapper `zarrfs` that records its argv."""

    def setUp(self):
        super().setUp()
        self.mnt = tempfile.mkdtemp(dir=WORK, prefix="mnt-")
        if os.path.exists(ARGV_LOG):
            os.unlink(ARGV_LOG)

    def tearDown(self):
        if zfmount.anything_mounted_at(self.mnt) or zarrfs_pids(self.mnt):
            BgMount(self.mnt, "leftover").stop(failed=True)
        super().tearDown()

    def mounted_and_reads(self, cmd, how, opts_expected=("ro",), unmount=("fusermount3", "-u"),
                          env=None, source=None):
        """Run a mount command; check /proc/mounts (fuse.zarrfs, the store as source, options),
        read every array, unmount with `unmount`, and check the daemon is gone."""
        bg = BgMount(self.mnt, how)
        try:
            r = zfmount.run(cmd, env=env, timeout=30)
            argv = read_argv_log()
            detail = ("\n  command: %s\n  status %d\n  stderr: %s\n  zarrfs received: %s"
                      % (" ".join(map(shlex.quote, cmd)), r.returncode, r.stderr.strip(),
                         argv if argv is None else " ".join(map(shlex.quote, argv))))
            self.assertEqual(r.returncode, 0, "%s failed:%s" % (how, detail))
            entries = proc_mounts(self.mnt)
            self.assertTrue(entries, "nothing mounted at %s:%s" % (self.mnt, detail))
            src, fstype, options = entries[-1]
            self.assertEqual(fstype, "fuse.zarrfs", detail)
            self.assertEqual(src, source or STORE, detail)
            for o in opts_expected:
                self.assertIn(o, options.split(","), "mount option %s missing: %s" % (o, options))
            for name, want in WANT.items():
                self.assertBytesEqual(zfmount.read_all(os.path.join(self.mnt, name)), want,
                                      "%s (%s)" % (name, how))
            pids = zarrfs_pids(self.mnt)
            self.assertEqual(len(pids), 1, "zarrfs daemons for %s: %s" % (self.mnt, pids))
            u = zfmount.run(list(unmount) + [self.mnt])
            self.assertEqual(u.returncode, 0, "%s: %s" % (" ".join(unmount), u.stderr))
            self.assertFalse(zfmount.anything_mounted_at(self.mnt), "still mounted")
            self.assertTrue(wait_until(lambda: not os.path.exists("/proc/%d" % pids[0]), 10),
                            "zarrfs (pid %d) still running 10 s after %s" % (pids[0],
                                                                            " ".join(unmount)))
            return argv, options
        finally:
            bg.stop()

    def test_01_mount_t_fuse_zarrfs(self):
        """mount -t fuse.zarrfs STORE MNT -o <the options of mnt-zarr.mount>: mounted read-only
        as fuse.zarrfs with the store as source, reads right, fusermount3 -u ends it; also with
        _netdev,nofail (ended by umount), zarrfs options, and no options at all (mount(8) then
        passes rw: the mount is read-write, as for any file system)."""
        with open(os.path.join(UNITS, "mnt-zarr.mount")) as f:
            unit_opts = re.search(r"^Options=(.*)$", f.read(), re.M).group(1)
        # mount(8) notes _netdev in /run/mount/utab, which only umount(8) clears
        fuse_u, umount = ("fusermount3", "-u"), ("umount",)
        cases = [(["-o", unit_opts], ("ro", "allow_other"), fuse_u),
                 (["-o", unit_opts + ",_netdev,nofail"], ("ro", "allow_other"), umount),
                 (["-o", "ro,cache_size=16M,threads=2,log_level=info"], ("ro",), fuse_u),
                 ([], ("rw",), fuse_u)]
        for extra, want_opts, unmount in cases:
            with self.subTest(options=extra):
                argv, options = self.mounted_and_reads(
                    ["mount", "-t", "fuse.zarrfs", STORE, self.mnt] + extra,
                    "mount -t fuse.zarrfs %s" % " ".join(extra), want_opts, unmount=unmount)
                self.assertIsNotNone(argv, "the wrapper zarrfs in %s was not run"
                                     % SHELL_PATH_DIR)
                log("  mount -t fuse.zarrfs %-40s -> zarrfs %s; /proc/mounts: %s"
                    % (" ".join(extra), " ".join(argv), options))

    def test_02_mount_fuse3_with_path(self):
        """mount.fuse3 run directly finds zarrfs through PATH (the built binary's directory
        first), with fstab options it handles itself (_netdev,nofail)."""
        bindir = os.path.join(WORK, "pathbin")
        os.makedirs(bindir, exist_ok=True)
        link = os.path.join(bindir, "zarrfs")
        if not os.path.lexists(link):
            os.symlink(ZARRFS, link)
        env = dict(os.environ, PATH=bindir + ":" + os.environ.get("PATH", SYSTEMD_PATH))
        helper = shutil.which("mount.fuse3", path="/sbin:/usr/sbin:" + env["PATH"])
        self.assertIsNotNone(helper, "no mount.fuse3")
        for opts in ("ro,allow_other", "ro,allow_other,_netdev,nofail"):
            with self.subTest(options=opts):
                argv, options = self.mounted_and_reads(
                    [helper, STORE, self.mnt, "-t", "fuse.zarrfs", "-o", opts],
                    "mount.fuse3 -o " + opts, ("ro", "allow_other"), env=env)
                self.assertIsNone(argv, "the wrapper ran instead of the PATH's zarrfs")
                log("  %s STORE MNT -t fuse.zarrfs -o %s: mounted (%s)" % (helper, opts, options))

    def fstab_lines(self):
        """The fstab lines in the man page's FSTAB section: [(source, options)]."""
        text = roff_text(MAN)
        sec = text[text.index(".SH FSTAB"):text.index(".SH SYSTEMD")]
        lines = []
        for l in sec.splitlines():
            f = l.split()
            if len(f) == 6 and f[2] == "fuse.zarrfs":
                opts = re.sub(r"credentials=[^,]*", "credentials=" + self.cred_file(), f[3])
                opts = re.sub(r"netrc=[^,]*", "netrc=" + self.cred_file("netrc"), opts)
                lines.append((f[0], opts))
        self.assertGreaterEqual(len(lines), 4, "too few fstab examples in the man page")
        return lines

    def cred_file(self, kind="credentials"):
        """A file for the man page's lines that name one, mode 0600, owned by the user running
        the test: -o credentials (dummy S3 keys, HTTP user and password) or -o netrc."""
        path = os.path.join(WORK, "fstab." + kind)
        if not os.path.exists(path):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write("machine 127.0.0.1 login fstab password fstab-test\n" if kind == "netrc"
                        else "aws_access_key_id = AKIDFSTABTEST\n"
                        "aws_secret_access_key = fstab-test\n"
                        "http_user = fstab\nhttp_password = fstab-test\n")
        return path

    def test_03_fstab(self):
        """Each local fstab line of the man page (source and mount point replaced) mounts with
        `mount -T FSTAB MNT`, reads right and ends with umount(8); so does an http(s) line
        (_netdev,nofail) with its server replaced by an nginx on 127.0.0.1 serving the same
        store. Each remote one (http(s), s3, gs, az), its server replaced by a closed port of
        127.0.0.1 (an S3, GCS or Azure line gets endpoint= that port), fails with a clear
        connection error and leaves nothing mounted."""
        fstab = os.path.join(WORK, "fstab")
        lines = self.fstab_lines()
        self.assertTrue([o for s_, o in lines if s_.startswith("http") and "_netdev" in o],
                        "no http(s) fstab line with _netdev in the man page")
        with rs.Nginx(os.path.dirname(STORE)) as web:
            for src, opts in lines:
                if not src.startswith("http"):
                    continue
                url = web.url(os.path.basename(STORE))
                with open(fstab, "w") as f:
                    f.write("# zarrfs test fstab\n%s  %s  fuse.zarrfs  %s  0  0\n"
                            % (url, self.mnt, opts))
                argv, options = self.mounted_and_reads(["mount", "-T", fstab, self.mnt],
                                                       "mount -T (%s)" % opts,
                                                       ("ro", "allow_other"),
                                                       unmount=("umount",), source=url)
                log("  fstab %s %-40s -> zarrfs %s" % (url, opts, " ".join(argv)))
        for src, opts in lines:
            with self.subTest(source=src, options=opts):
                remote = "://" in src
                if remote:
                    # never the network: the same scheme and path on a closed local port
                    with socket.socket() as sk:
                        sk.bind(("127.0.0.1", 0))
                        port = sk.getsockname()[1]
                    scheme, _, rest = src.partition("://")
                    if scheme in ("s3", "gs", "az"):  # buckets and containers: endpoint=
                        source = src
                        opts_used = opts + ",endpoint=http://127.0.0.1:%d" % port
                    else:
                        source = "%s://127.0.0.1:%d/%s" % (scheme, port, rest.partition("/")[2])
                        opts_used = opts
                    opts_used += ",retries=1,timeout=5"
                else:
                    source, opts_used = STORE, opts
                with open(fstab, "w") as f:
                    f.write("# zarrfs test fstab\n%s  %s  fuse.zarrfs  %s  0  0\n"
                            % (source, self.mnt, opts_used))
                if not remote:
                    argv, options = self.mounted_and_reads(["mount", "-T", fstab, self.mnt],
                                                           "mount -T (%s)" % opts,
                                                           ("ro", "allow_other"),
                                                           unmount=("umount",))
                    log("  fstab %-70s -> zarrfs %s" % (opts, " ".join(argv)))
                    continue
                env = dict(os.environ, AWS_ACCESS_KEY_ID="AKIAZARRFSFSTABTEST0",
                           AWS_SECRET_ACCESS_KEY="zarrfs-fstab-test-secret")
                bg = BgMount(self.mnt, "remote")
                try:
                    r = zfmount.run(["mount", "-T", fstab, self.mnt], timeout=60, env=env)
                    self.assertNotEqual(r.returncode, 0, "mounting %s succeeded?" % source)
                    self.assertNotIn("not supported", r.stderr)
                    self.assertRegex(r.stderr, r"(?i)(connect|refused)",
                                     "no connection error for %s" % source)
                    self.assertIn("127.0.0.1", r.stderr)
                    self.assertFalse(zfmount.anything_mounted_at(self.mnt))
                finally:
                    bg.stop()
                log("  fstab %-40s (as %s) refused: %s"
                    % (src, source, r.stderr.strip().splitlines()[0]))


def drop_inherited_fuse_mounts():
    """The private namespace starts as a copy of the host's mounts, among them the FUSE mounts of
    the tests running beside this one (meson runs two at a time). The host's root is not a
    shared mount here, so when such a test unmounts, the copy here lives on and keeps that file
    system alive: its daemon never hears that the mount is gone (its /dev/fuse reads do not end)
    and the test reports "daemon still running 10 s after unmount". Detach every inherited FUSE
    mount at once, here only."""
    for mp, fstype, _src in sorted(zfmount.mount_entries(), key=lambda e: -len(e[0])):
        if fstype == "fuse" or fstype.startswith(("fuse.", "fuseblk")):
            try:
                subprocess.run(["umount", "-l", mp], capture_output=True, timeout=10)
            except (OSError, subprocess.SubprocessError):
                pass


def main():
    if os.environ.get(NS_FLAG) != "1":
        # run the whole file in a private mount namespace (see the module's docstring)
        unshare = shutil.which("unshare")
        if not unshare:
            log("FAIL: unshare (util-linux) not found")
            sys.exit(1)
        env = dict(os.environ)
        env[NS_FLAG] = "1"
        os.execve(unshare, [unshare, "--mount", "--propagation", "private", sys.executable,
                            os.path.abspath(__file__)] + sys.argv[1:], env)
    drop_inherited_fuse_mounts()
    for tool in ("groff", "man", "systemd-analyze", "systemd-escape", "mount", "umount",
                 "fusermount3"):
        if not shutil.which(tool):
            log("FAIL: %s not found (scripts/deps.sh installs it)" % tool)
            sys.exit(1)
    if not os.path.isdir(SHELL_PATH_DIR):
        log("FAIL: %s missing" % SHELL_PATH_DIR)
        sys.exit(1)
    zfmount.main()


if __name__ == "__main__":
    main()
