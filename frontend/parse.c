#include "parse.h"
#include "lexer.h"
#include "parser.h"

#include <limits.h>
#include <stdlib.h>

/* Lemon's entry points (parser.c, generated). */
void *rf_ParseAlloc(void *(*alloc)(size_t));
void rf_Parse(void *parser, int major, rf_token minor, rf_parse_state *ps);
void rf_ParseFree(void *parser, void (*dealloc)(void *));

static void *parser_alloc(size_t n) { return rf_malloc(n); }

/* A program is text: a control byte other than tab, line feed, vertical
 * tab, form feed and carriage return means a binary file (or the wrong
 * file), reported once rather than as one error per odd byte. */
bool rf_parse_is_text(const rf_source *src, rf_diag *diag)
{
    const unsigned char *t = (const unsigned char *)src->text;
    int line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < src->len; i++) {
        unsigned c = t[i];
        if (c == '\n') {
            line++;
            line_start = i + 1;
        } else if ((c < 0x20 && (c < '\t' || c > '\r')) || c == 0x7f) {
            size_t col = i - line_start + 1;
            rf_loc at = { src, line, col < INT_MAX ? (int)col : INT_MAX, 1 };
            rf_diag_error(diag, (rf_loc){ src, 0, 0, 0 },
                          "not a text file (contains byte 0x%02x at line %d, column %d)", c, line,
                          rf_diag_column(at));
            return false;
        }
    }
    return true;
}

/* Brackets left open in the current clause after token `type`. */
static int bracket_depth(int depth, int type)
{
    switch (type) {
    case TK_LPAREN: case TK_LBRACKET: case TK_LAGG:
        return depth + 1;
    case TK_RPAREN: case TK_RBRACKET: case TK_RAGG:
        return depth > 0 ? depth - 1 : 0;
    default:
        return depth;
    }
}

/* After a syntax error: does this '.' end the broken clause? Not when it
 * is inside brackets (as in `agg(3.)`) or when what follows cannot begin a
 * clause (as in `x = .5`), unless the next token is on a later line (a
 * clause with unbalanced brackets ends at its line's '.') or there is none. */
static bool ends_clause(int depth, const rf_token *dot, const rf_token *next)
{
    if (next->type == 0 || next->loc.line > dot->loc.line)
        return true;
    return depth == 0 && (next->type == TK_IDENT || next->type == TK_AT);
}

bool rf_parse(const rf_source *src, rf_diag *diag, ast_program *prog)
{
    if (!rf_parse_is_text(src, diag))
        return false;
    rf_parse_state ps = { .prog = prog, .diag = diag, .src = src };
    int errors_before = diag->errors;
    rf_lexer lx;
    rf_lexer_init(&lx, src, diag);
    void *parser = rf_ParseAlloc(parser_alloc);
    rf_token tok, next;
    bool have_next = false;
    int depth = 0;
    for (;;) {
        if (have_next)
            tok = next;
        else
            rf_lexer_next(&lx, &tok);
        have_next = false;
        depth = bracket_depth(depth, tok.type);
        ps.cur_loc = tok.loc;
        rf_Parse(parser, tok.type, tok, &ps);
        if (ps.failed) {
            /* One error per clause: drop the rest of it, start afresh. */
            while (tok.type != 0) {
                if (tok.type == TK_DOT) {
                    rf_lexer_next(&lx, &next);
                    if (ends_clause(depth, &tok, &next)) {
                        have_next = true;
                        break;
                    }
                    tok = next;
                } else {
                    rf_lexer_next(&lx, &tok);
                }
                depth = bracket_depth(depth, tok.type);
            }
            rf_ParseFree(parser, free);
            parser = rf_ParseAlloc(parser_alloc);
            ps.failed = false;
            depth = 0;
        } else if (tok.type == TK_DOT) {
            depth = 0;
        }
        if (tok.type == 0)
            break;
    }
    rf_ParseFree(parser, free);
    return diag->errors == errors_before;
}
