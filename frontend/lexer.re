/* The lexer: re2c turns this into lexer.c in the build folder. The source
 * text ends with a NUL at text[len]; a NUL before that is an unexpected
 * character, so embedded NULs cannot end the scan early (rf_parse turns
 * away text with control bytes before lexing, but the lexer does not
 * count on it). */
#include "lexer.h"
#include "parser.h"

#include <stdlib.h>
#include <string.h>

void rf_lexer_init(rf_lexer *lx, const rf_source *src, rf_diag *diag)
{
    lx->src = src;
    lx->diag = diag;
    lx->cur = src->text;
    lx->lim = src->text + src->len;
    lx->line_start = src->text;
    lx->line = 1;
    lx->last_end = (rf_loc){ src, 0, 0, 0 };
}

static rf_loc loc_at(const rf_lexer *lx, const char *p, int len)
{
    rf_loc loc = { lx->src, lx->line, (int)(p - lx->line_start) + 1, len };
    return loc;
}

static void make_token(rf_lexer *lx, rf_token *tok, int type, const char *start)
{
    size_t len = (size_t)(lx->cur - start);
    tok->type = type;
    tok->start = start;
    tok->len = len > (1 << 20) ? 1 << 20 : (int)len;
    tok->loc = loc_at(lx, start, tok->len);
    tok->unterminated = false;
    if (type != 0) /* tokens never span lines */
        lx->last_end = loc_at(lx, lx->cur, 1);
}

static void newline(rf_lexer *lx, const char *after)
{
    lx->line++;
    lx->line_start = after;
}

/* Skips a block comment whose opening slash-star is at start; comments do
 * not nest. */
static void skip_comment(rf_lexer *lx, const char *start)
{
    rf_loc open = loc_at(lx, start, 2);
    const char *p = start + 2;
    for (;;) {
        if (p >= lx->lim) {
            rf_diag_error(lx->diag, open, "unclosed comment");
            break;
        }
        if (p[0] == '*' && p[1] == '/') {
            p += 2;
            break;
        }
        if (*p == '\n')
            newline(lx, p + 1);
        p++;
    }
    lx->cur = p;
}

static bool is_escape(char c)
{
    return c == 'n' || c == 't' || c == 'r' || c == '\\' || c == '"' || c == '\'';
}

/* Scans a string literal whose opening quote is at start. A string ends at
 * its closing quote; a newline or the end of the input first means the
 * string is unclosed (reported at the opening quote). */
static void scan_string(rf_lexer *lx, rf_token *tok, const char *start)
{
    const char *p = start + 1;
    bool closed = false;
    while (p < lx->lim && *p != '\n') {
        if (*p == '"') {
            p++;
            closed = true;
            break;
        }
        if (*p == '\\') {
            char e = p + 1 < lx->lim ? p[1] : '\0';
            if (!is_escape(e)) {
                bool printable = e > ' ' && e < 127;
                if (printable)
                    rf_diag_error(lx->diag, loc_at(lx, p, 2), "bad escape '\\%c' in string", e);
                else
                    rf_diag_error(lx->diag, loc_at(lx, p, 1), "bad escape in string");
                p += printable ? 2 : 1;
                continue;
            }
            p += 2;
            continue;
        }
        p++;
    }
    if (!closed)
        rf_diag_error(lx->diag, loc_at(lx, start, 1), "unclosed string");
    lx->cur = p;
    make_token(lx, tok, TK_STRING, start);
    tok->unterminated = !closed;
}

static void bad_character(rf_lexer *lx, const char *p)
{
    unsigned char c = (unsigned char)*p;
    if (c > ' ' && c < 127)
        rf_diag_error(lx->diag, loc_at(lx, p, 1), "unexpected character '%c'", c);
    else
        rf_diag_error(lx->diag, loc_at(lx, p, 1), "unexpected character '\\x%02x'", c);
    /* Skip the rest of a UTF-8 sequence: one error per character. */
    p++;
    if (c >= 0xc0)
        while (p < lx->lim && ((unsigned char)*p & 0xc0) == 0x80)
            p++;
    lx->cur = p;
}

void rf_lexer_next(rf_lexer *lx, rf_token *tok)
{
    for (;;) {
        const char *start = lx->cur;
        const unsigned char *YYCURSOR = (const unsigned char *)start;
        const unsigned char *YYMARKER = YYCURSOR, *YYCTXMARKER = YYCURSOR;
#define TOKEN(t) do { lx->cur = (const char *)YYCURSOR; make_token(lx, tok, (t), start); return; } while (0)
        /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:yyfill:enable = 0;

        digits = [0-9]+;
        exponent = [eE] [+-]? digits;

        [\x00] {
            if (start >= lx->lim) {
                lx->cur = start;
                make_token(lx, tok, 0, start);
                tok->loc.len = 1;
                if (lx->last_end.line > 0)
                    tok->loc = lx->last_end;
                return;
            }
            bad_character(lx, start);
            continue;
        }
        [ \t\r\f\v]+ { lx->cur = (const char *)YYCURSOR; continue; }
        "\n" { lx->cur = (const char *)YYCURSOR; newline(lx, lx->cur); continue; }
        "//" [^\n\x00]* { lx->cur = (const char *)YYCURSOR; continue; }
        "/*" { skip_comment(lx, start); continue; }
        "\"" { scan_string(lx, tok, start); return; }

        "agg" / [ \t\r\n]* "<<" { TOKEN(TK_AGG); }
        "_" { TOKEN(TK_WILDCARD); }
        "true" { TOKEN(TK_TRUE); }
        "false" { TOKEN(TK_FALSE); }
        [a-zA-Z_][a-zA-Z0-9_]* { TOKEN(TK_IDENT); }
        digits { TOKEN(TK_INT); }
        digits "." digits exponent? | digits exponent { TOKEN(TK_FLOAT); }

        "." { TOKEN(TK_DOT); }
        "," { TOKEN(TK_COMMA); }
        "(" { TOKEN(TK_LPAREN); }
        ")" { TOKEN(TK_RPAREN); }
        "[" { TOKEN(TK_LBRACKET); }
        "]" { TOKEN(TK_RBRACKET); }
        "->" { TOKEN(TK_ARROW); }
        "<-" { TOKEN(TK_LARROW); }
        "<<" { TOKEN(TK_LAGG); }
        ">>" { TOKEN(TK_RAGG); }
        "!" { TOKEN(TK_BANG); }
        "=" { TOKEN(TK_EQ); }
        "!=" { TOKEN(TK_NE); }
        "<" { TOKEN(TK_LT); }
        "<=" { TOKEN(TK_LE); }
        ">" { TOKEN(TK_GT); }
        ">=" { TOKEN(TK_GE); }
        "+" { TOKEN(TK_PLUS); }
        "-" { TOKEN(TK_MINUS); }
        "*" { TOKEN(TK_STAR); }
        "/" { TOKEN(TK_SLASH); }
        "%" { TOKEN(TK_PERCENT); }
        "&&" { TOKEN(TK_ANDAND); }
        "||" { TOKEN(TK_OROR); }
        "@" { TOKEN(TK_AT); }
        * { bad_character(lx, start); continue; }
        */
#undef TOKEN
    }
}

char *rf_lexer_decode_string(const char *body, size_t len, size_t *out_len)
{
    char *out = rf_malloc(len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = body[i];
        if (c == '\\' && i + 1 < len) {
            char e = body[++i];
            switch (e) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            default: c = e; break; /* \\ \" \' (bad ones were reported) */
            }
        }
        out[n++] = c;
    }
    out[n] = '\0';
    *out_len = n;
    return out;
}
