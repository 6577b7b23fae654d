/*
 * lexer.c — minijit's tokens. The whole source is tokenised up front so that the compiler
 * can look ahead freely (function signatures are collected before any body is compiled,
 * which is what makes forward references and recursion work in one pass).
 *
 *     fn fib(n) {            # comment to end of line
 *         if n < 2 { return n }
 *     }
 */
#include "mj_internal.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct { const char *word; enum mj_tok kind; } keywords[] = {
    { "fn", T_FN }, { "var", T_VAR }, { "if", T_IF }, { "else", T_ELSE },
    { "while", T_WHILE }, { "return", T_RETURN },
};

const char *mj__tok_name(enum mj_tok k)
{
    static const char *const names[] = {
        [T_EOF] = "end of file", [T_NUM] = "number", [T_IDENT] = "name",
        [T_FN] = "'fn'", [T_VAR] = "'var'", [T_IF] = "'if'", [T_ELSE] = "'else'",
        [T_WHILE] = "'while'", [T_RETURN] = "'return'",
        [T_LPAREN] = "'('", [T_RPAREN] = "')'", [T_LBRACE] = "'{'", [T_RBRACE] = "'}'",
        [T_COMMA] = "','", [T_SEMI] = "';'", [T_PLUS] = "'+'", [T_MINUS] = "'-'",
        [T_STAR] = "'*'", [T_SLASH] = "'/'", [T_PERCENT] = "'%'", [T_NOT] = "'!'",
        [T_ASSIGN] = "'='", [T_EQ] = "'=='", [T_NE] = "'!='", [T_LT] = "'<'", [T_LE] = "'<='",
        [T_GT] = "'>'", [T_GE] = "'>='", [T_ANDAND] = "'&&'", [T_OROR] = "'||'",
    };
    return (unsigned)k < sizeof names / sizeof *names && names[k] ? names[k] : "token";
}

static int lex_error(const char *file, char *err, size_t errlen, uint32_t line, uint32_t col,
                     const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(err, errlen, "%s:%u:%u: error: ", file, line, col);
    if (n >= 0 && (size_t)n < errlen) {
        va_start(ap, fmt);
        vsnprintf(err + n, errlen - n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int mj__lex(const char *src, const char *file, struct mj_token **out, char *err, size_t errlen)
{
    size_t n = 0, cap = 256;
    struct mj_token *t = malloc(cap * sizeof *t);
    uint32_t line = 1;
    const char *bol = src;      /* beginning of the current line, for columns */
    const char *s = src;

    *out = NULL;
    if (!t)
        return lex_error(file, err, errlen, 1, 1, "out of memory");
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n' || *s == '#') {
            if (*s == '#') {
                while (*s && *s != '\n')
                    s++;
                continue;
            }
            if (*s == '\n') {
                line++;
                bol = s + 1;
            }
            s++;
        }
        if (n + 1 >= cap) {
            struct mj_token *nt = cap < (1u << 26) ? realloc(t, 2 * cap * sizeof *t) : NULL;
            if (!nt) {
                free(t);
                return lex_error(file, err, errlen, line, 1, "out of memory (source too large)");
            }
            t = nt;
            cap *= 2;
        }
        struct mj_token *k = &t[n++];
        size_t col = (size_t)(s - bol) + 1;
        uint32_t kcol = col > UINT32_MAX ? UINT32_MAX : (uint32_t)col;
        *k = (struct mj_token){ .line = line, .col = kcol, .text = s, .len = 1 };
        if (!*s) {
            k->kind = T_EOF;
            k->len = 0;
            break;
        }
        if (isdigit((unsigned char)*s)) {
            uint64_t v = 0;
            const char *p = s;
            int base = 10;
            if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && isxdigit((unsigned char)p[2])) {
                base = 16;
                p += 2;
            }
            for (; isalnum((unsigned char)*p); p++) {
                int d = isdigit((unsigned char)*p) ? *p - '0'
                      : base == 16 && isxdigit((unsigned char)*p) ? tolower((unsigned char)*p) - 'a' + 10
                      : -1;
                if (d < 0) {
                    free(t);
                    return lex_error(file, err, errlen, line, kcol, "bad digit '%c' in number", *p);
                }
                /* Hex may spell any 64-bit pattern; decimal stops at INT64_MAX. */
                uint64_t limit = base == 16 ? UINT64_MAX : (uint64_t)INT64_MAX;
                if (v > (limit - (uint64_t)d) / (uint64_t)base) {
                    free(t);
                    return lex_error(file, err, errlen, line, kcol, "number too large");
                }
                v = v * (uint64_t)base + (uint64_t)d;
            }
            k->kind = T_NUM;
            k->num = (int64_t)v;
            k->len = (uint32_t)(p - s);
            s = p;
            continue;
        }
        if (isalpha((unsigned char)*s) || *s == '_') {
            const char *p = s;
            while (isalnum((unsigned char)*p) || *p == '_')
                p++;
            if (p - s > 255) {
                free(t);
                return lex_error(file, err, errlen, line, kcol, "name longer than 255 characters");
            }
            k->kind = T_IDENT;
            k->len = (uint32_t)(p - s);
            for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
                if (strlen(keywords[i].word) == k->len && !memcmp(keywords[i].word, s, k->len))
                    k->kind = keywords[i].kind;
            s = p;
            continue;
        }
        char c = *s, c2 = s[1];
        k->len = 1;
        switch (c) {
        case '(': k->kind = T_LPAREN; break;
        case ')': k->kind = T_RPAREN; break;
        case '{': k->kind = T_LBRACE; break;
        case '}': k->kind = T_RBRACE; break;
        case ',': k->kind = T_COMMA; break;
        case ';': k->kind = T_SEMI; break;
        case '+': k->kind = T_PLUS; break;
        case '-': k->kind = T_MINUS; break;
        case '*': k->kind = T_STAR; break;
        case '/': k->kind = T_SLASH; break;
        case '%': k->kind = T_PERCENT; break;
        case '=': k->kind = c2 == '=' ? (k->len = 2, T_EQ) : T_ASSIGN; break;
        case '!': k->kind = c2 == '=' ? (k->len = 2, T_NE) : T_NOT; break;
        case '<': k->kind = c2 == '=' ? (k->len = 2, T_LE) : T_LT; break;
        case '>': k->kind = c2 == '=' ? (k->len = 2, T_GE) : T_GT; break;
        case '&':
            if (c2 == '&') { k->kind = T_ANDAND; k->len = 2; break; }
            /* fall through */
        case '|':
            if (c == '|' && c2 == '|') { k->kind = T_OROR; k->len = 2; break; }
            /* fall through */
        default:
            free(t);
            if (isprint((unsigned char)c))
                return lex_error(file, err, errlen, line, kcol, "unexpected character '%c'", c);
            return lex_error(file, err, errlen, line, kcol, "unexpected byte 0x%02x", (unsigned char)c);
        }
        s += k->len;
    }
    *out = t;
    return (int)n;
}
