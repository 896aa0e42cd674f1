#include "parse.h"
#include "lexer.h"
#include "parser.h"

#include <stdlib.h>

/* Lemon's entry points (parser.c, generated). */
void *rf_ParseAlloc(void *(*alloc)(size_t));
void rf_Parse(void *parser, int major, rf_token minor, rf_parse_state *ps);
void rf_ParseFree(void *parser, void (*dealloc)(void *));

static void *parser_alloc(size_t n) { return rf_malloc(n); }

bool rf_parse(const rf_source *src, rf_diag *diag, ast_program *prog)
{
    rf_parse_state ps = { prog, diag, src, false, false };
    int errors_before = diag->errors;
    rf_lexer lx;
    rf_lexer_init(&lx, src, diag);
    void *parser = rf_ParseAlloc(parser_alloc);
    for (;;) {
        rf_token tok;
        rf_lexer_next(&lx, &tok);
        rf_Parse(parser, tok.type, tok, &ps);
        if (ps.failed) {
            /* Resynchronise: drop the rest of the clause, start afresh. */
            while (tok.type != TK_DOT && tok.type != 0)
                rf_lexer_next(&lx, &tok);
            rf_ParseFree(parser, free);
            parser = rf_ParseAlloc(parser_alloc);
            ps.failed = false;
        }
        if (tok.type == 0)
            break;
    }
    rf_ParseFree(parser, free);
    return diag->errors == errors_before;
}
