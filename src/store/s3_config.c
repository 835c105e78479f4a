/* s3_config.c — AWS credentials and region as the AWS CLI finds them: environment variables, then
 * the shared credentials file (~/.aws/credentials, $AWS_SHARED_CREDENTIALS_FILE) and config file
 * (~/.aws/config, $AWS_CONFIG_FILE), INI files read the way botocore's configparser reads them.
 * Secrets are wiped from memory once copied and never appear in a message. */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "store_impl.h"

#define MAX_FILE (1 << 20)

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

bool zf_ini_get(const char *text, const char *section, const char *key, char **out)
{
    bool in_section = false, after_key = false;
    size_t kl = strlen(key);
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        const char *end = nl ? nl : line + strlen(line);
        const char *next = nl ? nl + 1 : NULL;
        bool indented = blank(*line) && *line != '\r';
        const char *a = line, *b = end;
        while (a < b && blank(*a))
            a++;
        while (b > a && blank(b[-1]))
            b--;
        line = next;
        if (a == b || *a == '#' || *a == ';')
            continue;
        if (indented && after_key)
            continue; /* the continuation of a value, or a nested setting ("s3 =" ...) */
        after_key = false;
        if (*a == '[') {
            const char *close = b;
            while (close > a && close[-1] != ']')
                close--;
            if (close == a)
                continue;
            const char *sa = a + 1, *sb = close - 1;
            while (sa < sb && blank(*sa))
                sa++;
            while (sb > sa && blank(sb[-1]))
                sb--;
            in_section = (size_t)(sb - sa) == strlen(section) &&
                         memcmp(sa, section, (size_t)(sb - sa)) == 0;
            continue;
        }
        const char *eq = a;
        while (eq < b && *eq != '=' && *eq != ':')
            eq++;
        if (eq == b)
            continue;
        after_key = true;
        if (!in_section)
            continue;
        const char *ne = eq;
        while (ne > a && blank(ne[-1]))
            ne--;
        if ((size_t)(ne - a) != kl || strncasecmp(a, key, kl) != 0)
            continue;
        const char *v = eq + 1;
        while (v < b && blank(*v))
            v++;
        *out = strndup(v, (size_t)(b - v));
        return *out != NULL;
    }
    return false;
}

/* $VAR if set and not empty, else ~/.aws/name; "~/" expanded. malloc'ed. */
static char *aws_path(const char *var, const char *name)
{
    const char *p = getenv(var);
    const char *home = getenv("HOME");
    char buf[1024];
    if (!home || !*home) {
        struct passwd pw, *res = NULL;
        if (getpwuid_r(getuid(), &pw, buf, sizeof buf, &res) == 0 && res)
            home = res->pw_dir;
        else
            home = "/";
    }
    char *out = NULL;
    if (p && *p) {
        if (p[0] == '~' && p[1] == '/') {
            if (asprintf(&out, "%s%s", home, p + 1) < 0)
                out = NULL;
        } else {
            out = strdup(p);
        }
    } else if (asprintf(&out, "%s/.aws/%s", home, name) < 0) {
        out = NULL;
    }
    return out;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    char *buf = malloc(MAX_FILE + 1);
    size_t n = buf ? fread(buf, 1, MAX_FILE, f) : 0;
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

static void wipe_text(char *t)
{
    if (t) {
        explicit_bzero(t, strlen(t));
        free(t);
    }
}

void zf_aws_credentials_free(zf_aws_credentials *c)
{
    wipe_text(c->access_key);
    wipe_text(c->secret_key);
    wipe_text(c->session_token);
    c->access_key = c->secret_key = c->session_token = NULL;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* Keys of section in text; ZF_ERR_NOT_FOUND when it has none. */
static zf_status from_ini(const char *text, const char *section, const char *where,
                          zf_aws_credentials *out, zf_err *err)
{
    char *id = NULL, *secret = NULL;
    zf_ini_get(text, section, "aws_access_key_id", &id);
    zf_ini_get(text, section, "aws_secret_access_key", &secret);
    if (id && *id && secret && *secret) {
        out->access_key = id;
        out->secret_key = secret;
        if (!zf_ini_get(text, section, "aws_session_token", &out->session_token))
            zf_ini_get(text, section, "aws_security_token", &out->session_token);
        if (out->session_token && !*out->session_token) {
            free(out->session_token);
            out->session_token = NULL;
        }
        snprintf(out->source, sizeof out->source, "[%s] of %s", section, where);
        return ZF_OK;
    }
    bool half = (id && *id) || (secret && *secret);
    wipe_text(id);
    wipe_text(secret);
    if (half)
        return zf_fail(err, ZF_ERR_INVALID, "[%s] of %s has only one of aws_access_key_id and "
                       "aws_secret_access_key", section, where);
    return ZF_ERR_NOT_FOUND;
}

zf_status zf_aws_credentials_load(const char *profile, zf_aws_credentials *out, zf_err *err)
{
    memset(out, 0, sizeof *out);
    if (!profile) {
        const char *id = env("AWS_ACCESS_KEY_ID"), *secret = env("AWS_SECRET_ACCESS_KEY");
        if (id && secret) {
            const char *token = env("AWS_SESSION_TOKEN");
            if (!token)
                token = env("AWS_SECURITY_TOKEN");
            if (!(out->access_key = strdup(id)) || !(out->secret_key = strdup(secret)) ||
                (token && !(out->session_token = strdup(token)))) {
                zf_aws_credentials_free(out);
                return ZF_ERR_NOMEM;
            }
            snprintf(out->source, sizeof out->source, "the environment");
            return ZF_OK;
        }
        if (id || secret)
            return zf_fail(err, ZF_ERR_INVALID, "%s is set but %s is not",
                           id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                           id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
        profile = env("AWS_PROFILE");
        if (!profile)
            profile = "default";
    }
    char *path = aws_path("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    char *cpath = aws_path("AWS_CONFIG_FILE", "config");
    if (!path || !cpath) {
        free(path);
        free(cpath);
        return ZF_ERR_NOMEM;
    }
    zf_status st = ZF_ERR_NOT_FOUND;
    char *text = read_text(path);
    if (text) {
        st = from_ini(text, profile, path, out, err);
        wipe_text(text);
    }
    if (st == ZF_ERR_NOT_FOUND && (text = read_text(cpath)) != NULL) {
        /* the AWS CLI also takes keys from the config file, in [profile NAME] or [default] */
        char section[300];
        if (strcmp(profile, "default") == 0)
            snprintf(section, sizeof section, "default");
        else
            snprintf(section, sizeof section, "profile %s", profile);
        st = from_ini(text, section, cpath, out, err);
        wipe_text(text);
    }
    if (st == ZF_ERR_NOT_FOUND)
        zf_fail(err, ZF_ERR_NOT_FOUND,
                "no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set and "
                "%s has no profile [%s] with aws_access_key_id and aws_secret_access_key (for a "
                "public bucket, mount with -o anonymous)", path, profile);
    free(path);
    free(cpath);
    return st;
}

char *zf_aws_config_region(const char *profile)
{
    if (!profile)
        profile = env("AWS_PROFILE");
    if (!profile)
        profile = "default";
    char *path = aws_path("AWS_CONFIG_FILE", "config");
    char *text = path ? read_text(path) : NULL;
    free(path);
    if (!text)
        return NULL;
    char section[300];
    if (strcmp(profile, "default") == 0)
        snprintf(section, sizeof section, "default");
    else
        snprintf(section, sizeof section, "profile %s", profile);
    char *region = NULL;
    if (!zf_ini_get(text, section, "region", &region) || !*region) {
        free(region);
        region = NULL;
    }
    free(text);
    return region;
}
