/* The credentials file of -o credentials=FILE (credentials.c): what it reads (comments, blanks,
 * CRLF, values holding '=' and '#'), and each refusal — another owner, group or other bits, a
 * directory, a fifo, a missing file, malformed lines, unknown and repeated keys, empty values,
 * control characters, half pairs, a bearer token beside a user and password, no credentials —
 * with a message naming the file (and the line), never a secret. The .netrc check
 * (zf_secret_file_check) is the same. Run as root for the other-owner case (skipped otherwise). */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zarrfs/store.h"

#include "store_tests.h"

#define SECRET "S3CR3T-value-never-shown"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/zf-creds-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* dir/name holding text, with mode. */
static const char *put(const char *name, const char *text, size_t len, mode_t mode)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
    close(fd);
    ck_assert_int_eq(chmod(path, mode), 0);
    return path;
}

/* Loading text (mode 0600) fails with st and a message naming the file and holding needle,
 * and not the secret. */
static void refused(const char *text, zf_status st, const char *needle)
{
    const char *path = put("bad", text, strlen(text), 0600);
    zf_credentials c;
    zf_err err = {""};
    zf_status got = zf_credentials_load(path, &c, &err);
    ck_assert_msg(got == st, "%s: %s (%s)", text, zf_status_str(got), err.msg);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, needle), "%s: %s", text, err.msg);
    ck_assert_msg(!strstr(err.msg, SECRET) && !strstr(err.msg, "S3CR3T"), "%s", err.msg);
    ck_assert_ptr_null(c.aws_secret_access_key);
    ck_assert_ptr_null(c.http_password);
    ck_assert_ptr_null(c.bearer_token);
}

START_TEST(credentials_file_read)
{
    make_dir();
    static const char text[] =
        "# zarrfs credentials\r\n"
        "\n"
        "  aws_access_key_id = AKIAFILE\r\n"
        "aws_secret_access_key=" SECRET "/with=equals#and+hash\n"
        "\taws_session_token =\ttok==  \n"
        "   # an indented comment\n"
        "http_user = zfuser\n"
        "http_password = pass word with spaces";
    const char *path = put("ok", text, sizeof text - 1, 0600);
    zf_credentials c;
    zf_err err = {""};
    ck_assert_msg(zf_credentials_load(path, &c, &err) == ZF_OK, "%s", err.msg);
    ck_assert_str_eq(c.aws_access_key_id, "AKIAFILE");
    ck_assert_str_eq(c.aws_secret_access_key, SECRET "/with=equals#and+hash");
    ck_assert_str_eq(c.aws_session_token, "tok==");
    ck_assert_str_eq(c.http_user, "zfuser");
    ck_assert_str_eq(c.http_password, "pass word with spaces");
    ck_assert_ptr_null(c.bearer_token);
    zf_credentials_free(&c);
    ck_assert_ptr_null(c.aws_secret_access_key);
    /* owner-only modes other than 0600 are fine; a bearer token alone */
    path = put("ro", "bearer_token = " SECRET "\n", strlen("bearer_token = " SECRET "\n"), 0400);
    ck_assert_msg(zf_credentials_load(path, &c, &err) == ZF_OK, "%s", err.msg);
    ck_assert_str_eq(c.bearer_token, SECRET);
    ck_assert_ptr_null(c.aws_access_key_id);
    zf_credentials_free(&c);
    ck_assert_int_eq(zf_secret_file_check(path, &err), ZF_OK);
    unlink(path);
    unlink(put("ok", "", 0, 0600));
    rmdir(dir);
}
END_TEST

START_TEST(credentials_file_refusals)
{
    make_dir();
    zf_credentials c;
    zf_err err = {""};
    const char good[] = "aws_access_key_id = AKIA\naws_secret_access_key = " SECRET "\n";
    /* who may read it */
    static const mode_t modes[] = {0644, 0640, 0604, 0660, 0602, 0610, 0601};
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
        const char *path = put("mode", good, sizeof good - 1, modes[i]);
        ck_assert_int_eq(zf_credentials_load(path, &c, &err), ZF_ERR_PERMISSION);
        ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "chmod 600"), "%s", err.msg);
        char m[16];
        snprintf(m, sizeof m, "mode %04o", (unsigned)modes[i]);
        ck_assert_msg(strstr(err.msg, m), "%s", err.msg);
        ck_assert_int_eq(zf_secret_file_check(path, &err), ZF_ERR_PERMISSION);
        unlink(path);
    }
    if (geteuid() == 0) { /* another owner */
        const char *path = put("owner", good, sizeof good - 1, 0600);
        ck_assert_int_eq(chown(path, 54321, 54322), 0);
        ck_assert_int_eq(zf_credentials_load(path, &c, &err), ZF_ERR_PERMISSION);
        ck_assert_msg(strstr(err.msg, "owned by uid 54321") && strstr(err.msg, "(uid 0)"), "%s",
                      err.msg);
        ck_assert_int_eq(zf_secret_file_check(path, &err), ZF_ERR_PERMISSION);
        unlink(path);
    }
    /* not a file; missing */
    char sub[128], fifo[128], missing[128];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    ck_assert_int_eq(zf_credentials_load(sub, &c, &err), ZF_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "a directory, not a regular file"), "%s", err.msg);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(zf_credentials_load(fifo, &c, &err), ZF_ERR_INVALID); /* no hang */
    ck_assert_msg(strstr(err.msg, "a fifo"), "%s", err.msg);
    snprintf(missing, sizeof missing, "%s/missing", dir);
    ck_assert_int_eq(zf_credentials_load(missing, &c, &err), ZF_ERR_NOT_FOUND);
    ck_assert_msg(strstr(err.msg, missing) && strstr(err.msg, "No such file"), "%s", err.msg);
    ck_assert_int_eq(zf_secret_file_check(missing, &err), ZF_ERR_NOT_FOUND);
    ck_assert_int_eq(zf_secret_file_check(sub, &err), ZF_ERR_INVALID);
    /* what it holds */
    refused("aws_access_key_id = AKIA\n" SECRET "\n", ZF_ERR_INVALID,
            "line 2: expected KEY = VALUE");
    refused("# c\n\nhttp_user: u\nhttp_password = " SECRET "\n", ZF_ERR_INVALID,
            "line 3: expected KEY = VALUE");
    refused("http_user = u\nhttp_passwd = " SECRET "\n", ZF_ERR_INVALID,
            "line 2: unknown key \"http_passwd\" (known: aws_access_key_id");
    refused("http_user = u\n" SECRET " = x\n", ZF_ERR_INVALID, "line 2: unknown key (known:");
    refused("= " SECRET "\n", ZF_ERR_INVALID, "line 1: no key before '='");
    refused("AWS_ACCESS_KEY_ID = AKIA\n", ZF_ERR_INVALID, "line 1: unknown key (known:");
    refused("bearer_token = " SECRET "\nbearer_token = " SECRET "x\n", ZF_ERR_INVALID,
            "line 2: bearer_token given again (first on line 1)");
    refused("http_user = u\nhttp_password =   \n", ZF_ERR_INVALID,
            "line 2: http_password has no value");
    refused("bearer_token = " SECRET "\x01x\n", ZF_ERR_INVALID,
            "line 1: the value of bearer_token has control characters");
    refused("bearer_token = " SECRET "\rx\n", ZF_ERR_INVALID, "control characters");
    refused("aws_access_key_id = AKIA\n", ZF_ERR_INVALID,
            "aws_access_key_id without aws_secret_access_key");
    refused("aws_secret_access_key = " SECRET "\n", ZF_ERR_INVALID,
            "aws_secret_access_key without aws_access_key_id");
    refused("aws_session_token = " SECRET "\n", ZF_ERR_INVALID, "aws_session_token without");
    refused("http_password = " SECRET "\n", ZF_ERR_INVALID, "http_password without http_user");
    refused("http_user = u\n", ZF_ERR_INVALID, "http_user without http_password");
    refused("http_user = u\nhttp_password = " SECRET "\nbearer_token = " SECRET "\n",
            ZF_ERR_INVALID, "both http_user/http_password and bearer_token");
    refused("http_user = a:b\nhttp_password = " SECRET "\n", ZF_ERR_INVALID, "has a ':'");
    refused("# nothing\n\n", ZF_ERR_INVALID, "no credentials in it");
    const char nul[] = "bearer_token = " SECRET "\0\n";
    const char *path = put("nul", nul, sizeof nul - 1, 0600);
    ck_assert_int_eq(zf_credentials_load(path, &c, &err), ZF_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "NUL") && !strstr(err.msg, SECRET), "%s", err.msg);
    unlink(path);
    size_t big = 65 * 1024;
    char *text = malloc(big);
    memset(text, '#', big);
    path = put("big", text, big, 0600);
    free(text);
    ck_assert_int_eq(zf_credentials_load(path, &c, &err), ZF_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "larger than 64 KiB"), "%s", err.msg);
    unlink(path);
    unlink(put("bad", "", 0, 0600));
    unlink(fifo);
    rmdir(sub);
    rmdir(dir);
}
END_TEST

TCase *store_credentials_tcase(void)
{
    TCase *tc = tcase_create("credentials");
    tcase_add_test(tc, credentials_file_read);
    tcase_add_test(tc, credentials_file_refusals);
    return tc;
}
