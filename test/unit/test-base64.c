/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Base64 (RFC 4648, padded): the RFC's test vectors, binary round trips, malformed input. */
#include "lib/basic/base64.h"
#include "lib/basic/util.h"
#include "test.h"

static void test_vectors(void)
{
    /* RFC 4648 section 10, and bytes that use '+' and '/'. */
    static const struct {
        const char *plain;
        size_t len;
        const char *encoded;
    } cases[] = {
        {"", 0, ""},
        {"f", 1, "Zg=="},
        {"fo", 2, "Zm8="},
        {"foo", 3, "Zm9v"},
        {"foob", 4, "Zm9vYg=="},
        {"fooba", 5, "Zm9vYmE="},
        {"foobar", 6, "Zm9vYmFy"},
        {"\x00\x01\x02\xff", 4, "AAEC/w=="},
        {"\xfb\xef\xbe", 3, "++++"},
        {"\xff\xff\xff", 3, "////"},
        {"\x00", 1, "AA=="},
        {"# GRUB\x00", 7, "IyBHUlVCAA=="},
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        _cleanup_free_ char *enc = NULL;
        _cleanup_free_ unsigned char *dec = NULL;
        size_t len = 99;

        CHECK_INTEQ(ks_base64_encode(cases[i].plain, cases[i].len, &enc), 0);
        CHECK_STREQ(enc, cases[i].encoded);
        CHECK_INTEQ(ks_base64_decode(cases[i].encoded, strlen(cases[i].encoded), &dec, &len), 0);
        CHECK_MSG(len == cases[i].len && dec && memcmp(dec, cases[i].plain, len) == 0 &&
                      dec[len] == '\0',
                  "case %zu: decoded %zu bytes", i, len);
    }
}

static void test_round_trip(void)
{
    unsigned char all[256 * 3];

    for (size_t i = 0; i < sizeof(all); i++)
        all[i] = (unsigned char)(i * 7 + i / 256);
    /* Every length mod 3, every byte value. */
    for (size_t n = 0; n <= sizeof(all); n += 97) {
        _cleanup_free_ char *enc = NULL;
        _cleanup_free_ unsigned char *dec = NULL;
        size_t len = 0;

        CHECK_INTEQ(ks_base64_encode(all, n, &enc), 0);
        CHECK_INTEQ(strlen(enc), (n + 2) / 3 * 4);
        CHECK_INTEQ(ks_base64_decode(enc, strlen(enc), &dec, &len), 0);
        CHECK_MSG(len == n && memcmp(dec, all, n) == 0, "round trip of %zu bytes", n);
    }
}

static void test_malformed(void)
{
    static const struct {
        const char *text;
        size_t len; /* 0: strlen */
    } bad[] = {
        {"Zg", 0},                            /* unpadded */
        {"Zg=", 0},                           /* length not a multiple of 4 */
        {"Zm9vY", 0},        {"Zg==Zg==", 0}, /* padding before the end */
        {"Z===", 0},                          /* three padding characters */
        {"====", 0},         {"Zm=v", 0},     /* '=' in the middle of a group */
        {"=m9v", 0},         {"Zm9 ", 0},     /* white space */
        {"Zm9v\n", 0},       {"Zm-v", 0},     /* URL-safe alphabet is not ours */
        {"Zm_v", 0},         {"Zm9\x80", 0},  /* not ASCII */
        {"Zm\0v", 4},                         /* NUL inside */
        {"I=BHUlVCAA==", 0},
    };

    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        unsigned char *dec = (unsigned char *)"untouched";
        size_t len = 99, n = bad[i].len ? bad[i].len : strlen(bad[i].text);

        CHECK_MSG(ks_base64_decode(bad[i].text, n, &dec, &len) == -EBADMSG, "bad case %zu", i);
        CHECK_MSG(len == 99 && streq((const char *)dec, "untouched"), "bad case %zu touched", i);
    }
}

int main(void)
{
    test_vectors();
    test_round_trip();
    test_malformed();
    TEST_DONE();
}
