/* icechunk_id.c — Icechunk object ids as text: Crockford base32 (www.crockford.com/base32.html),
 * uppercase, no padding, zero bits appended on the right (specification version 2, "Common
 * Types"): 12 bytes (96 bits) are 20 characters (100 bits, the last 4 zero). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "zarrfs/icechunk.h"

static const char ALPHABET[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

void zf_ic_id_encode(const uint8_t id[ZF_IC_ID_LEN], char out[ZF_IC_ID_TEXT_LEN + 1])
{
    uint32_t acc = 0; /* the bits not yet written, at the bottom */
    int nbits = 0;
    size_t k = 0;
    for (size_t i = 0; i < ZF_IC_ID_LEN; i++) {
        acc = (acc << 8) | id[i];
        nbits += 8;
        while (nbits >= 5) {
            nbits -= 5;
            out[k++] = ALPHABET[(acc >> nbits) & 31];
        }
        acc &= (1u << nbits) - 1;
    }
    if (nbits > 0)
        out[k++] = ALPHABET[(acc << (5 - nbits)) & 31];
    out[k] = '\0';
}

/* The value of one character, or -1. Crockford's decoding: either case; I, L as 1; O as 0. */
static int digit(char c)
{
    if (c >= 'a' && c <= 'z')
        c = (char)(c - 'a' + 'A');
    if (c == 'I' || c == 'L')
        return 1;
    if (c == 'O')
        return 0;
    const char *p = c ? strchr(ALPHABET, c) : NULL;
    return p ? (int)(p - ALPHABET) : -1;
}

bool zf_ic_id_decode(const char *text, uint8_t id[ZF_IC_ID_LEN])
{
    if (strnlen(text, ZF_IC_ID_TEXT_LEN + 1) != ZF_IC_ID_TEXT_LEN)
        return false;
    uint8_t out[ZF_IC_ID_LEN];
    uint32_t acc = 0;
    int nbits = 0;
    size_t k = 0;
    for (size_t i = 0; i < ZF_IC_ID_TEXT_LEN; i++) {
        int v = digit(text[i]);
        if (v < 0)
            return false;
        acc = (acc << 5) | (uint32_t)v;
        nbits += 5;
        if (nbits >= 8) {
            nbits -= 8;
            out[k++] = (uint8_t)(acc >> nbits);
        }
        acc &= (1u << nbits) - 1;
    }
    if (acc != 0) /* the padding bits (4 of them) must be zero */
        return false;
    memcpy(id, out, ZF_IC_ID_LEN);
    return true;
}
