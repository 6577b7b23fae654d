/* text.c — see text.h. */
#include "lib/text.h"

#include <stdarg.h>

void jhr_text_safe(FILE *f, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        fputc(c[i] < 0x20 || c[i] == 0x7f ? '?' : c[i], f);
}

void jhr_html_escape(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n && s[i]; i++) {
        switch (s[i]) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if ((unsigned char)s[i] < 0x20 && s[i] != '\n' && s[i] != '\t')
                fputc('?', f);      /* HTML has no character reference for most of these */
            else
                fputc(s[i], f);
        }
    }
}

void jhr_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
