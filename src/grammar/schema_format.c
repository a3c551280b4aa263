/* JSON Schema `format` -> a regex for the inside of the JSON string. Each regex accepts
 * only strings valid for the format (RFC 3339 dates with the right days per month and
 * leap years, RFC 3986 URIs, ...), so it may refuse some exotic valid spellings (IPv6
 * with an embedded IPv4 part, IP-literal URI hosts). A name outside the standard list is
 * an annotation (validators ignore it); a standard one not listed here is refused. */
#include <string.h>

#include "grammar/schema_int.h"

#define LEAP "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
#define DATE                                                                                       \
    "(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-"                  \
    "(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))|" LEAP "-02-29)"
#define TIME                                                                                       \
    "(?:(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]+)?(?:[Zz]|[-+](?:[01][0-9]|"         \
    "2[0-3]):[0-5][0-9]))"
#define DUR_TIME "T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)"
#define DURATION                                                                                   \
    "(?:P(?:[0-9]+W|(?:[0-9]+Y(?:[0-9]+M)?(?:[0-9]+D)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)(?:" DUR_TIME   \
    ")?|" DUR_TIME "))"
/* labels of at most 62 characters, at most 4 of them: never past 253 characters */
#define LABEL "[A-Za-z0-9](?:[A-Za-z0-9-]{0,60}[A-Za-z0-9])?"
#define HOSTNAME "(?:" LABEL "(?:\\." LABEL "){0,3})"
#define ATEXT "[A-Za-z0-9!#$%&'*+\\/=?^_`{|}~-]"
#define EMAIL "(?:" ATEXT "{1,64}(?:\\." ATEXT "{1,64}){0,3}@" HOSTNAME ")"
#define UUID "(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
#define OCTET "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
#define IPV4 "(?:" OCTET "(?:\\." OCTET "){3})"
#define H16 "[0-9A-Fa-f]{1,4}"
#define IPV6                                                                                       \
    "(?:(?:" H16 ":){7}" H16 "|(?:" H16 ":){1,7}:|(?:" H16 ":){1,6}:" H16 "|(?:" H16               \
    ":){1,5}(?::" H16 "){1,2}|(?:" H16 ":){1,4}(?::" H16 "){1,3}|(?:" H16 ":){1,3}(?::" H16        \
    "){1,4}|(?:" H16 ":){1,2}(?::" H16 "){1,5}|" H16 ":(?::" H16 "){1,6}|:(?:(?::" H16             \
    "){1,7}|:))"
/* RFC 3986: unreserved / sub-delims / pct-encoded, then pchar adds ':' and '@' */
#define UCHAR "(?:[A-Za-z0-9._~!$&'()*+,;=-]|%[0-9A-Fa-f]{2})"
#define PCHAR "(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})"
#define AUTHORITY "(?:(?:" UCHAR "|:)*@)?" UCHAR "*(?::[0-9]*)?"
#define QUERY_FRAG "(?:\\?(?:" PCHAR "|[\\/?])*)?(?:#(?:" PCHAR "|[\\/?])*)?"
#define HIER "(?:\\/\\/" AUTHORITY "(?:\\/" PCHAR "*)*|\\/?(?:" PCHAR "+(?:\\/" PCHAR "*)*)?)"
#define URI "(?:[A-Za-z][A-Za-z0-9+.-]*:" HIER QUERY_FRAG ")"
/* relative-ref: a first segment without ':' unless after "//" or "/" */
#define NOCOLON "(?:[A-Za-z0-9._~!$&'()*+,;=@-]|%[0-9A-Fa-f]{2})"
#define RELATIVE                                                                                   \
    "(?:(?:\\/\\/" AUTHORITY "(?:\\/" PCHAR "*)*|\\/(?:" PCHAR "+(?:\\/" PCHAR "*)*)?|" NOCOLON    \
    "+(?:\\/" PCHAR "*)*)?" QUERY_FRAG ")"

static const struct {
    const char *name, *re;
} formats[] = {
    {"date-time", "(?:" DATE "[Tt]" TIME ")"},
    {"date", DATE},
    {"time", TIME},
    {"duration", DURATION},
    {"email", EMAIL},
    {"hostname", HOSTNAME},
    {"ipv4", IPV4},
    {"ipv6", IPV6},
    {"uuid", UUID},
    {"uri", URI},
    {"uri-reference", "(?:" URI "|" RELATIVE ")"},
};

/* standard formats (draft-04 .. 2020-12) not enforced here */
static const char *refused[] = {
    "idn-email",    "idn-hostname",          "iri",  "iri-reference", "uri-template",
    "json-pointer", "relative-json-pointer", "regex"};

hr_err *hr_sc_format(hr_gbuf *o, const char *name, int *known) {
    *known = 0;
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (!strcmp(name, formats[i].name)) {
            hr_gbuf_puts(o, formats[i].re);
            *known = 1;
            return NULL;
        }
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (!strcmp(name, refused[i])) return hr_errf("format \"%s\" is not supported", name);
    return NULL;
}

int hr_sc_format_fits(const char *name, int64_t mn, int64_t mx) {
    static const struct {
        const char *name;
        int64_t lo, hi; /* hi -1: unbounded */
    } lens[] = {{"date", 10, 10},      {"uuid", 36, 36}, {"ipv4", 7, 15},     {"ipv6", 2, 39},
                {"date-time", 20, -1}, {"time", 9, -1},  {"duration", 3, -1}, {"email", 3, 511},
                {"hostname", 1, 251},  {"uri", 2, -1}};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        if (!strcmp(name, lens[i].name))
            return mn <= lens[i].lo && (mx < 0 || (lens[i].hi >= 0 && lens[i].hi <= mx));
    return 0;
}
