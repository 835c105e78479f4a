/* credentials.c — the credentials file of -o credentials=FILE: secrets for remote stores that
 * never stand on a command line (s3fs's passwd_file, rclone's config file).
 *
 * The file is refused unless it is a regular file that only its owner can read or write (no
 * group or other permission bits) and that owner is the user mounting (getuid()): checked with
 * fstat on the descriptor read, so what is checked is what is read. The same check applies to a
 * .netrc file (-o netrc). Lines are "key = value"; blank lines and '#' comments are skipped;
 * unknown keys, a key given twice, malformed lines and values with control characters are
 * refused with a message naming the line, never its value. Secrets are wiped from memory once
 * copied. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_impl.h"

#define MAX_CREDENTIALS_FILE (64 * 1024)

static void wipe(char **s)
{
    if (*s) {
        explicit_bzero(*s, strlen(*s));
        free(*s);
        *s = NULL;
    }
}

void zf_credentials_free(zf_credentials *c)
{
    if (!c)
        return;
    wipe(&c->aws_access_key_id);
    wipe(&c->aws_secret_access_key);
    wipe(&c->aws_session_token);
    wipe(&c->http_user);
    wipe(&c->http_password);
    wipe(&c->bearer_token);
    wipe(&c->azure_storage_account_name);
    wipe(&c->azure_storage_account_key);
    wipe(&c->azure_storage_sas_token);
    wipe(&c->google_oauth_access_token);
    wipe(&c->google_application_credentials);
}

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a fifo" : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m) || S_ISBLK(m)              ? "a device"
                                                   : "not a regular file";
}

/* Open path for reading after the checks of the file comment: the descriptor, or -1 with err
 * set. */
static int open_secret_file(const char *path, zf_err *err, zf_status *st)
{
    /* O_NONBLOCK: a fifo must not hang the mount; fstat then refuses it */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        *st = zf_fail(err, errno == ENOENT ? ZF_ERR_NOT_FOUND : ZF_ERR_PERMISSION,
                      "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    uid_t me = getuid();
    if (fstat(fd, &sb) != 0)
        *st = zf_fail(err, ZF_ERR_IO, "%s: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        *st = zf_fail(err, ZF_ERR_INVALID, "%s: %s, not a regular file", path,
                      kind_of(sb.st_mode));
    else if (sb.st_uid != me)
        *st = zf_fail(err, ZF_ERR_PERMISSION,
                      "%s: owned by uid %u, not by the user mounting (uid %u): refusing a file "
                      "of secrets someone else controls", path, (unsigned)sb.st_uid,
                      (unsigned)me);
    else if (sb.st_mode & 077)
        *st = zf_fail(err, ZF_ERR_PERMISSION,
                      "%s: mode %04o gives group or others access: refusing a file of "
                      "secrets others can reach (chmod 600 %s)", path,
                      (unsigned)(sb.st_mode & 07777), path);
    else if (sb.st_size > MAX_CREDENTIALS_FILE)
        *st = zf_fail(err, ZF_ERR_INVALID, "%s: larger than %d KiB", path,
                      MAX_CREDENTIALS_FILE / 1024);
    else
        return fd;
    close(fd);
    return -1;
}

zf_status zf_secret_file_check(const char *path, zf_err *err)
{
    zf_status st = ZF_OK;
    int fd = open_secret_file(path, err, &st);
    if (fd < 0)
        return st;
    close(fd);
    return ZF_OK;
}

static bool blank(char c) { return c == ' ' || c == '\t'; }

/* A key worth naming in a message: lower-case letters, digits and '_' (so that a secret written
 * where a key belongs is never echoed). */
static bool nameable(const char *k, size_t n)
{
    if (n == 0 || n > 40)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
            return false;
    return true;
}

#define KEYS "aws_access_key_id, aws_secret_access_key, aws_session_token, http_user, " \
             "http_password, bearer_token, azure_storage_account_name, " \
             "azure_storage_account_key, azure_storage_sas_token, google_oauth_access_token, " \
             "google_application_credentials"

static zf_status parse(const char *path, const char *text, size_t len, zf_credentials *c,
                       zf_err *err)
{
    struct {
        const char *name;
        char **slot;
        unsigned line;
    } keys[] = {{"aws_access_key_id", &c->aws_access_key_id, 0},
                {"aws_secret_access_key", &c->aws_secret_access_key, 0},
                {"aws_session_token", &c->aws_session_token, 0},
                {"http_user", &c->http_user, 0},
                {"http_password", &c->http_password, 0},
                {"bearer_token", &c->bearer_token, 0},
                {"azure_storage_account_name", &c->azure_storage_account_name, 0},
                {"azure_storage_account_key", &c->azure_storage_account_key, 0},
                {"azure_storage_sas_token", &c->azure_storage_sas_token, 0},
                {"google_oauth_access_token", &c->google_oauth_access_token, 0},
                {"google_application_credentials", &c->google_application_credentials, 0}};
    const size_t nkeys = sizeof keys / sizeof *keys;
    if (memchr(text, '\0', len))
        return zf_fail(err, ZF_ERR_INVALID, "%s: a NUL byte: not a text file", path);
    unsigned lineno = 0;
    for (const char *line = text; line < text + len;) {
        const char *nl = memchr(line, '\n', (size_t)(text + len - line));
        const char *end = nl ? nl : text + len, *next = nl ? nl + 1 : text + len;
        lineno++;
        const char *a = line, *b = end;
        line = next;
        if (b > a && b[-1] == '\r')
            b--;
        while (a < b && blank(*a))
            a++;
        while (b > a && blank(b[-1]))
            b--;
        if (a == b || *a == '#')
            continue;
        const char *eq = memchr(a, '=', (size_t)(b - a));
        if (!eq)
            return zf_fail(err, ZF_ERR_INVALID, "%s line %u: expected KEY = VALUE", path, lineno);
        const char *ke = eq, *v = eq + 1;
        while (ke > a && blank(ke[-1]))
            ke--;
        while (v < b && blank(*v))
            v++;
        size_t kl = (size_t)(ke - a);
        size_t k = 0;
        while (k < nkeys && !(strlen(keys[k].name) == kl && memcmp(keys[k].name, a, kl) == 0))
            k++;
        if (k == nkeys) {
            if (nameable(a, kl))
                return zf_fail(err, ZF_ERR_INVALID, "%s line %u: unknown key \"%.*s\" (known: "
                               KEYS ")", path, lineno, (int)kl, a);
            return zf_fail(err, ZF_ERR_INVALID, "%s line %u: %s (known: " KEYS ")", path,
                           lineno, kl ? "unknown key" : "no key before '='");
        }
        if (keys[k].line)
            return zf_fail(err, ZF_ERR_INVALID, "%s line %u: %s given again (first on line %u)",
                           path, lineno, keys[k].name, keys[k].line);
        if (v == b)
            return zf_fail(err, ZF_ERR_INVALID, "%s line %u: %s has no value", path, lineno,
                           keys[k].name);
        for (const char *p = v; p < b; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) /* values become header lines */
                return zf_fail(err, ZF_ERR_INVALID, "%s line %u: the value of %s has control "
                               "characters", path, lineno, keys[k].name);
        if (!(*keys[k].slot = strndup(v, (size_t)(b - v))))
            return ZF_ERR_NOMEM;
        keys[k].line = lineno;
    }
    if (!c->aws_access_key_id != !c->aws_secret_access_key)
        return zf_fail(err, ZF_ERR_INVALID, "%s: %s without %s", path,
                       c->aws_access_key_id ? "aws_access_key_id" : "aws_secret_access_key",
                       c->aws_access_key_id ? "aws_secret_access_key" : "aws_access_key_id");
    if (c->aws_session_token && !c->aws_access_key_id)
        return zf_fail(err, ZF_ERR_INVALID, "%s: aws_session_token without "
                       "aws_access_key_id and aws_secret_access_key", path);
    if (!c->http_user != !c->http_password)
        return zf_fail(err, ZF_ERR_INVALID, "%s: %s without %s", path,
                       c->http_user ? "http_user" : "http_password",
                       c->http_user ? "http_password" : "http_user");
    if (c->http_user && c->bearer_token)
        return zf_fail(err, ZF_ERR_INVALID, "%s: both http_user/http_password and bearer_token: "
                       "an HTTP store takes one of them", path);
    if (c->http_user && strchr(c->http_user, ':'))
        return zf_fail(err, ZF_ERR_INVALID, "%s: http_user has a ':' (Basic authentication "
                       "cannot carry it)", path);
    if (c->azure_storage_account_key && c->azure_storage_sas_token)
        return zf_fail(err, ZF_ERR_INVALID, "%s: both azure_storage_account_key and "
                       "azure_storage_sas_token: an Azure store signs with one of them", path);
    if (c->google_oauth_access_token && c->google_application_credentials)
        return zf_fail(err, ZF_ERR_INVALID, "%s: both google_oauth_access_token and "
                       "google_application_credentials: a GCS store takes one of them", path);
    if (!c->aws_access_key_id && !c->http_user && !c->bearer_token &&
        !c->azure_storage_account_key && !c->azure_storage_sas_token &&
        !c->google_oauth_access_token && !c->google_application_credentials)
        return zf_fail(err, ZF_ERR_INVALID, "%s: no credentials in it (keys: " KEYS ")", path);
    return ZF_OK;
}

zf_status zf_credentials_load(const char *path, zf_credentials *out, zf_err *err)
{
    memset(out, 0, sizeof *out);
    zf_status st = ZF_OK;
    int fd = open_secret_file(path, err, &st);
    if (fd < 0)
        return st;
    char *text = malloc(MAX_CREDENTIALS_FILE + 1);
    ssize_t n = text ? zf_pread_full(fd, text, MAX_CREDENTIALS_FILE + 1, 0) : 0;
    int e = errno;
    close(fd);
    if (!text)
        return ZF_ERR_NOMEM;
    if (n < 0)
        st = zf_fail(err, ZF_ERR_IO, "%s: %s", path, strerror(e));
    else if (n > MAX_CREDENTIALS_FILE)
        st = zf_fail(err, ZF_ERR_INVALID, "%s: larger than %d KiB", path,
                     MAX_CREDENTIALS_FILE / 1024);
    else
        st = parse(path, text, (size_t)n, out, err);
    explicit_bzero(text, MAX_CREDENTIALS_FILE + 1);
    free(text);
    if (st != ZF_OK)
        zf_credentials_free(out);
    return st;
}
