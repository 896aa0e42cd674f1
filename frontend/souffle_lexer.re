/* The Soufflé dialect's lexer: re2c turns this into souffle_lexer.c in the
 * build folder. It shares the LogiQL lexer's structures (lexer.h) and
 * conventions: the text ends with a NUL at text[len], tokens never span
 * lines, lexical errors are reported here and scanning goes on.
 *
 * Soufflé's own keywords are tokens here, as in Soufflé (so a relation
 * cannot be called `count` or `btree` in either). Constructs Red Fox does
 * not support come out as SF_UNSUPPORTED tokens; the driver (souffle.c)
 * reports them by their text, so the error names what was written. */
#include "souffle.h"
#include "souffle_parser.h"

#include <stdlib.h>
#include <string.h>

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
    if (type != 0)
        lx->last_end = loc_at(lx, lx->cur, 1);
}

static void newline(rf_lexer *lx, const char *after)
{
    lx->line++;
    lx->line_start = after;
}

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

/* Red Fox decodes the LogiQL escapes in Soufflé strings too (docs/souffle.md). */
static bool is_escape(char c)
{
    return c == 'n' || c == 't' || c == 'r' || c == '\\' || c == '"' || c == '\'';
}

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
    make_token(lx, tok, SF_STRING, start);
    tok->unterminated = !closed;
}

static void bad_character(rf_lexer *lx, const char *p)
{
    unsigned char c = (unsigned char)*p;
    if (c > ' ' && c < 127)
        rf_diag_error(lx->diag, loc_at(lx, p, 1), "unexpected character '%c'", c);
    else
        rf_diag_error(lx->diag, loc_at(lx, p, 1), "unexpected character '\\x%02x'", c);
    p++;
    if (c >= 0xc0)
        while (p < lx->lim && ((unsigned char)*p & 0xc0) == 0x80)
            p++;
    lx->cur = p;
}

/* `#include`, `#define`, ... at the start of a line: Soufflé runs the C
 * preprocessor over its input; Red Fox does not. One error, and the line
 * (with its backslash continuations) is skipped. */
static void preprocessor_line(rf_lexer *lx, const char *start)
{
    const char *p = start + 1;
    while (p < lx->lim && (*p == ' ' || *p == '\t'))
        p++;
    const char *word = p;
    while (p < lx->lim && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
        p++;
    rf_diag_error(lx->diag, loc_at(lx, start, (int)(p - start)),
                  "preprocessor directive '#%.*s' is not supported: Soufflé runs the C preprocessor "
                  "over its input and Red Fox does not; run `cpp -P` on the program first",
                  (int)(p - word), word);
    while (p < lx->lim) {
        if (*p == '\n') {
            if (p[-1] != '\\')
                break;
            newline(lx, p + 1);
        }
        p++;
    }
    lx->cur = p;
}

void rf_souffle_lexer_next(rf_lexer *lx, rf_token *tok)
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
        name = [a-zA-Z_?][a-zA-Z0-9_?]*;

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
        "#" {
            if (start == lx->line_start) {
                preprocessor_line(lx, start);
                continue;
            }
            bad_character(lx, start);
            continue;
        }

        ".decl" { TOKEN(SF_DECL); }
        ".type" | ".number_type" | ".symbol_type" { TOKEN(SF_TYPE); }
        ".input" | ".output" | ".printsize" { TOKEN(SF_IODIR); }
        ".comp" | ".init" | ".functor" | ".pragma" | ".plan" | ".limitsize" | ".override" | ".lattice"
            { TOKEN(SF_UNSUPPORTED); }

        "btree" | "brie" | "btree_delete" | "eqrel" | "inline" | "no_inline" | "magic" | "no_magic"
            | "overridable" | "input" | "output" | "printsize" { TOKEN(SF_QUALIFIER); }
        "choice-domain" { TOKEN(SF_UNSUPPORTED); }
        "nil" | "band" | "bor" | "bxor" | "bshl" | "bshru" | "bshr" | "bnot" | "land" | "lor" | "lxor"
            | "lnot" { TOKEN(SF_UNSUPPORTED); }
        "as" / [ \t]* "(" { TOKEN(SF_UNSUPPORTED); }
        "count" { TOKEN(SF_COUNT); }
        "sum" { TOKEN(SF_SUM); }
        "min" { TOKEN(SF_MIN); }
        "max" { TOKEN(SF_MAX); }
        "mean" { TOKEN(SF_MEAN); }
        "true" { TOKEN(SF_TRUE); }
        "false" { TOKEN(SF_FALSE); }
        "_" { TOKEN(SF_WILDCARD); }
        name { TOKEN(SF_IDENT); }

        digits "u"? | "0x" [0-9a-fA-F]+ "u"? | "0b" [01]+ "u"? { TOKEN(SF_INT); }
        digits "." digits exponent? | digits exponent { TOKEN(SF_FLOAT); }

        "." { TOKEN(SF_DOT); }
        "," { TOKEN(SF_COMMA); }
        ";" { TOKEN(SF_SEMI); }
        ":-" { TOKEN(SF_IF); }
        "<:" { TOKEN(SF_SUBTYPE); }
        ":" { TOKEN(SF_COLON); }
        "|" { TOKEN(SF_PIPE); }
        "(" { TOKEN(SF_LPAREN); }
        ")" { TOKEN(SF_RPAREN); }
        "{" { TOKEN(SF_LBRACE); }
        "}" { TOKEN(SF_RBRACE); }
        "[" | "]" | "$" | "@" { TOKEN(SF_UNSUPPORTED); }
        "!" { TOKEN(SF_BANG); }
        "=" { TOKEN(SF_EQ); }
        "!=" { TOKEN(SF_NE); }
        "<" { TOKEN(SF_LT); }
        "<=" { TOKEN(SF_LE); }
        ">" { TOKEN(SF_GT); }
        ">=" { TOKEN(SF_GE); }
        "+" { TOKEN(SF_PLUS); }
        "-" { TOKEN(SF_MINUS); }
        "*" { TOKEN(SF_STAR); }
        "/" { TOKEN(SF_SLASH); }
        "%" { TOKEN(SF_PERCENT); }
        "^" { TOKEN(SF_CARET); }
        * { bad_character(lx, start); continue; }
        */
#undef TOKEN
    }
}
