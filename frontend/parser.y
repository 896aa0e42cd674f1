/* The grammar (Lemon). Actions only build the syntax tree; every check
 * beyond syntax is the checker's (check.c). Finished clauses are appended
 * to the program as soon as they are reduced, so a syntax error loses only
 * the clause it is in (the driver in parse.c skips to the clause's end). */

%name rf_Parse
%token_prefix TK_
%token_type { rf_token }
%extra_argument { rf_parse_state *ps }
%stack_size 1000

%include {
#include "lexer.h"
#include "parse.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct yyParser;
static void report_syntax_error(struct yyParser *parser, int major, rf_token tok);

static char *token_text(rf_token t)
{
    return rf_strndup(t.start, (size_t)t.len);
}

static ast_expr *leaf(ast_expr_kind kind, rf_token t)
{
    return ast_expr_new(kind, t.loc);
}

static ast_expr *depth_checked(rf_parse_state *ps, ast_expr *e)
{
    if (e->depth > RF_MAX_EXPR_DEPTH && !ps->too_deep_reported) {
        ps->too_deep_reported = true;
        rf_diag_error(ps->diag, e->loc, "expression nested too deeply (more than %d levels)",
                      RF_MAX_EXPR_DEPTH);
    }
    return e;
}

static ast_expr *binary(rf_parse_state *ps, rf_exop op, ast_expr *a, ast_expr *b)
{
    return depth_checked(ps, ast_expr_binary(op, a, b));
}

static ast_expr *int_literal(rf_token t)
{
    ast_expr *e = leaf(AST_INT, t);
    uint64_t v = 0;
    for (int i = 0; i < t.len; i++) {
        unsigned d = (unsigned)(t.start[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            e->too_big = true;
            break;
        }
        v = v * 10 + d;
    }
    e->magnitude = v;
    return e;
}

static ast_expr *float_literal(rf_token t)
{
    ast_expr *e = leaf(AST_FLOAT, t);
    char *text = token_text(t);
    const char *why;
    /* As input files read floats; out of range (1e400, 1e-400) is reported by the checks. */
    e->too_big = !rf_float64_parse(text, strlen(text), &e->fval, &why);
    /* Plain digits: also the exact value, for where the literal meets a decimal.
     * Trailing zeros of the fraction are dropped where they would not fit
     * (more than 18 fraction digits, or more digits than int64 holds):
     * 2.5000000000000000000 is 2.5 (docs/language.md, "Lexical structure"). */
    if (!strpbrk(text, "eE")) {
        const char *end = text + strlen(text), *dot = strchr(text, '.');
        uint64_t v = 0;
        int scale = 0;
        bool ok = true, frac = false;
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 1) {
                if (ok && scale <= 18)
                    break;
                while (end > dot + 1 && end[-1] == '0')
                    end--;
                v = 0, scale = 0, ok = true, frac = false;
            }
            for (const char *p = text; p < end && ok; p++) {
                if (*p == '.') {
                    frac = true;
                    continue;
                }
                unsigned d = (unsigned)(*p - '0');
                ok = v <= ((uint64_t)INT64_MAX - d) / 10;
                v = v * 10 + d;
                scale += frac;
            }
        }
        if (ok && scale <= 18) {
            e->dec_ok = true;
            e->dec_scale = scale;
            e->magnitude = v;
        }
    }
    e->text = text;
    e->textlen = strlen(text);
    return e;
}

static void string_body(rf_token t, char **text, size_t *len)
{
    size_t body = (size_t)t.len - (t.unterminated ? 1 : 2);
    *text = rf_lexer_decode_string(t.start + 1, body, len);
}

static ast_expr *string_literal(rf_token t)
{
    ast_expr *e = leaf(AST_STRING, t);
    string_body(t, &e->text, &e->textlen);
    return e;
}
}

%syntax_error {
    report_syntax_error(yypParser, yymajor, TOKEN);
}

/* Reported at the token that the full stack could not take. */
%stack_overflow {
    if (!ps->failed)
        rf_diag_error(ps->diag, ps->cur_loc, "program nested too deeply");
    ps->failed = true;
}

%left OROR.
%left ANDAND.
%nonassoc EQ NE LT LE GT GE.
%left PLUS MINUS.
%left STAR SLASH PERCENT.
%right UMINUS.

%type atom { ast_atom * }
%destructor atom { ast_atom_free($$); }
%type fatom { ast_atom * }
%destructor fatom { ast_atom_free($$); }
%type tatom { ast_atom * }
%destructor tatom { ast_atom_free($$); }
%type tatoms { ast_list * }
%destructor tatoms { ast_list_free($$, ast_atom_free_any); }
%type args { ast_list * }
%destructor args { ast_list_free($$, ast_expr_free_any); }
%type arglist { ast_list * }
%destructor arglist { ast_list_free($$, ast_expr_free_any); }
%type expr { ast_expr * }
%destructor expr { ast_expr_free($$); }
%type literal { ast_literal * }
%destructor literal { ast_literal_free($$); }
%type body { ast_list * }
%destructor body { ast_list_free($$, ast_literal_free_any); }
%type aggspec { ast_clause * }
%destructor aggspec { ast_clause_free($$); }
%type aggdef { ast_agg * }
%destructor aggdef { ast_agg_free_any($$); }
%type aggdefs { ast_list * }
%destructor aggdefs { ast_list_free($$, ast_agg_free_any); }
%type darg { ast_darg * }
%destructor darg { ast_darg_free_any($$); }
%type dargs { ast_list * }
%destructor dargs { ast_list_free($$, ast_darg_free_any); }

program ::= clauses.
clauses ::= .
clauses ::= clauses clause.

/* edge(x, y) -> int32(x), int32(y). */
clause ::= atom(H) ARROW tatoms(T) DOT. {
    ast_clause *c = ast_clause_new(AST_DECL, H->loc);
    c->head = H;
    c->types = (ast_atom **)ast_list_take(T, &c->nbody);
    ast_program_add(ps->prog, c);
}
/* flag() -> .  (a zero-arity predicate: no attributes to type) */
clause ::= atom(H) ARROW DOT. {
    ast_clause *c = ast_clause_new(AST_DECL, H->loc);
    c->head = H;
    ast_program_add(ps->prog, c);
}
/* edge(1, 2). */
clause ::= atom(H) DOT. {
    ast_clause *c = ast_clause_new(AST_FACT, H->loc);
    c->head = H;
    ast_program_add(ps->prog, c);
}
/* path(x, z) <- path(x, y), edge(y, z). */
clause ::= atom(H) LARROW body(B) DOT. {
    ast_clause *c = ast_clause_new(AST_RULE, H->loc);
    c->head = H;
    c->body = (ast_literal **)ast_list_take(B, &c->nbody);
    ast_program_add(ps->prog, c);
}
/* c[x] = n <- agg<<n = count()>> edge(x, _). */
clause ::= atom(H) LARROW aggspec(A) body(B) DOT. {
    A->loc = H->loc;
    A->head = H;
    A->body = (ast_literal **)ast_list_take(B, &A->nbody);
    ast_program_add(ps->prog, A);
}
/* @input(edge, "edge.tsv"). */
clause ::= AT(A) IDENT(N) LPAREN dargs(L) RPAREN DOT. {
    ast_clause *c = ast_clause_new(AST_DIRECTIVE, ast_loc_span(A.loc, N.loc));
    c->dir_name = token_text(N);
    c->dir_loc = c->loc;
    c->dargs = (ast_darg **)ast_list_take(L, &c->nargs);
    ast_program_add(ps->prog, c);
}

/* agg<<s = total(x), n = count()>> */
aggspec(A) ::= AGG LAGG aggdefs(L) RAGG. {
    A = ast_clause_new(AST_RULE, ((ast_agg *)L->items[0])->var_loc);
    A->has_agg = true;
    A->aggs = (ast_agg **)ast_list_take(L, &A->naggs);
}
aggdefs(L) ::= aggdef(D). { L = ast_list_new(); ast_list_push(L, D); }
aggdefs(L) ::= aggdefs(X) COMMA aggdef(D). { L = X; ast_list_push(L, D); }
aggdef(D) ::= IDENT(V) EQ IDENT(F) LPAREN args(L) RPAREN. {
    D = rf_calloc(1, sizeof *D);
    D->var = token_text(V);
    D->var_loc = V.loc;
    D->fn = token_text(F);
    D->fn_loc = F.loc;
    D->args = (ast_expr **)ast_list_take(L, &D->nargs);
}

dargs(L) ::= darg(D). { L = ast_list_new(); ast_list_push(L, D); }
dargs(L) ::= dargs(X) COMMA darg(D). { L = X; ast_list_push(L, D); }
darg(D) ::= IDENT(N). {
    D = rf_calloc(1, sizeof *D);
    D->text = token_text(N);
    D->textlen = (size_t)N.len;
    D->loc = N.loc;
}
/* @order(q, desc(c)) */
darg(D) ::= IDENT(W) LPAREN IDENT(N) RPAREN(R). {
    D = rf_calloc(1, sizeof *D);
    D->text = token_text(N);
    D->textlen = (size_t)N.len;
    D->wrapper = token_text(W);
    D->loc = ast_loc_span(W.loc, R.loc);
}
/* @limit(q, 10) */
darg(D) ::= INT(N). {
    D = rf_calloc(1, sizeof *D);
    D->is_number = true;
    D->text = token_text(N);
    D->textlen = (size_t)N.len;
    D->loc = N.loc;
}
darg(D) ::= FLOAT(N). {
    D = rf_calloc(1, sizeof *D);
    D->is_number = true;
    D->text = token_text(N);
    D->textlen = (size_t)N.len;
    D->loc = N.loc;
}
darg(D) ::= MINUS(M) INT(N). {
    D = rf_calloc(1, sizeof *D);
    D->is_number = true;
    D->text = rf_sprintf("-%.*s", N.len, N.start);
    D->textlen = strlen(D->text);
    D->loc = ast_loc_span(M.loc, N.loc);
}
darg(D) ::= MINUS(M) FLOAT(N). {
    D = rf_calloc(1, sizeof *D);
    D->is_number = true;
    D->text = rf_sprintf("-%.*s", N.len, N.start);
    D->textlen = strlen(D->text);
    D->loc = ast_loc_span(M.loc, N.loc);
}
darg(D) ::= STRING(S). {
    D = rf_calloc(1, sizeof *D);
    D->is_string = true;
    string_body(S, &D->text, &D->textlen);
    D->loc = S.loc;
}

/* Type constraints: int32(x), ..., and decimal[2](x). */
tatoms(L) ::= tatom(A). { L = ast_list_new(); ast_list_push(L, A); }
tatoms(L) ::= tatoms(X) COMMA tatom(A). { L = X; ast_list_push(L, A); }
tatom(A) ::= atom(X). { A = X; }
tatom(A) ::= IDENT(N) LBRACKET args(P) RBRACKET LPAREN args(L) RPAREN(R). {
    A = ast_atom_new(token_text(N), N.loc, L, false);
    A->loc = ast_loc_span(N.loc, R.loc);
    A->has_params = true;
    A->params = (ast_expr **)ast_list_take(P, &A->nparams);
}

atom(A) ::= IDENT(N) LPAREN args(L) RPAREN(R). {
    A = ast_atom_new(token_text(N), N.loc, L, false);
    A->loc = ast_loc_span(N.loc, R.loc);
}
atom(A) ::= fatom(X). { A = X; }
fatom(A) ::= IDENT(N) LBRACKET args(L) RBRACKET EQ expr(V). {
    ast_list_push(L, V);
    A = ast_atom_new(token_text(N), N.loc, L, true);
    A->loc = ast_loc_span(N.loc, V->loc);
}
args(L) ::= . { L = ast_list_new(); }
args(L) ::= arglist(X). { L = X; }
arglist(L) ::= expr(E). { L = ast_list_new(); ast_list_push(L, E); }
arglist(L) ::= arglist(X) COMMA expr(E). { L = X; ast_list_push(L, E); }

body(L) ::= literal(X). { L = ast_list_new(); ast_list_push(L, X); }
body(L) ::= body(B) COMMA literal(X). { L = B; ast_list_push(L, X); }

/* A body literal is an expression (a condition), except that a call
 * written at its top, p(...), is an atom: the grammar cannot tell a
 * predicate from a function, so this is decided here, by position (the
 * checker treats an atom naming no predicate but a function as that
 * function's test). */
literal(L) ::= expr(E). {
    if (E->kind == AST_CALL && !E->has_params && !E->parens)
        L = ast_literal_new(AST_LIT_ATOM, ast_atom_from_call(E), NULL);
    else
        L = ast_literal_new(AST_LIT_COND, NULL, E);
}
literal(L) ::= fatom(A). { L = ast_literal_new(AST_LIT_ATOM, A, NULL); }
literal(L) ::= BANG(B) atom(A). {
    L = ast_literal_new(AST_LIT_NEGATED, A, NULL);
    L->loc = ast_loc_span(B.loc, A->loc);
}

expr(E) ::= expr(A) OROR expr(B). { E = binary(ps, RF_EX_OR, A, B); }
expr(E) ::= expr(A) ANDAND expr(B). { E = binary(ps, RF_EX_AND, A, B); }
expr(E) ::= expr(A) EQ expr(B). { E = binary(ps, RF_EX_EQ, A, B); }
expr(E) ::= expr(A) NE expr(B). { E = binary(ps, RF_EX_NE, A, B); }
expr(E) ::= expr(A) LT expr(B). { E = binary(ps, RF_EX_LT, A, B); }
expr(E) ::= expr(A) LE expr(B). { E = binary(ps, RF_EX_LE, A, B); }
expr(E) ::= expr(A) GT expr(B). { E = binary(ps, RF_EX_GT, A, B); }
expr(E) ::= expr(A) GE expr(B). { E = binary(ps, RF_EX_GE, A, B); }
expr(E) ::= expr(A) PLUS expr(B). { E = binary(ps, RF_EX_ADD, A, B); }
expr(E) ::= expr(A) MINUS expr(B). { E = binary(ps, RF_EX_SUB, A, B); }
expr(E) ::= expr(A) STAR expr(B). { E = binary(ps, RF_EX_MUL, A, B); }
expr(E) ::= expr(A) SLASH expr(B). { E = binary(ps, RF_EX_DIV, A, B); }
expr(E) ::= expr(A) PERCENT expr(B). { E = binary(ps, RF_EX_MOD, A, B); }
expr(E) ::= MINUS(M) expr(A). [UMINUS] {
    E = ast_expr_negate(A, M.loc);
    if (E->depth > RF_MAX_EXPR_DEPTH && !ps->too_deep_reported) {
        ps->too_deep_reported = true;
        rf_diag_error(ps->diag, E->loc, "expression nested too deeply (more than %d levels)",
                      RF_MAX_EXPR_DEPTH);
    }
}
expr(E) ::= LPAREN(L) expr(A) RPAREN(R). { E = A; E->loc = ast_loc_span(L.loc, R.loc); E->parens = true; }
expr(E) ::= IDENT(N). { E = leaf(AST_VAR, N); E->text = token_text(N); E->textlen = (size_t)N.len; }
/* year(d), if(c, a, b), date("1995-03-15"), decimal[2](x), ... */
expr(E) ::= IDENT(N) LPAREN args(L) RPAREN(R). {
    E = depth_checked(ps, ast_expr_call(token_text(N), N.loc, NULL, L, R.loc));
}
expr(E) ::= IDENT(N) LBRACKET args(P) RBRACKET LPAREN args(L) RPAREN(R). {
    E = depth_checked(ps, ast_expr_call(token_text(N), N.loc, P, L, R.loc));
}
expr(E) ::= WILDCARD(W). { E = leaf(AST_WILDCARD, W); }
expr(E) ::= INT(N). { E = int_literal(N); }
expr(E) ::= FLOAT(N). { E = float_literal(N); }
expr(E) ::= STRING(S). { E = string_literal(S); }
expr(E) ::= TRUE(T). { E = leaf(AST_BOOL, T); E->bval = true; }
expr(E) ::= FALSE(T). { E = leaf(AST_BOOL, T); }

%code {
/* Describes a token for "unexpected X" / "expected X". */
static const char *token_desc(int major)
{
    switch (major) {
    case 0: return "end of input";
    case TK_IDENT: return "a name";
    case TK_INT: return "an integer";
    case TK_FLOAT: return "a number";
    case TK_STRING: return "a string";
    case TK_TRUE: return "'true'";
    case TK_FALSE: return "'false'";
    case TK_WILDCARD: return "'_'";
    case TK_AGG: return "'agg'";
    case TK_DOT: return "'.'";
    case TK_COMMA: return "','";
    case TK_LPAREN: return "'('";
    case TK_RPAREN: return "')'";
    case TK_LBRACKET: return "'['";
    case TK_RBRACKET: return "']'";
    case TK_ARROW: return "'->'";
    case TK_LARROW: return "'<-'";
    case TK_LAGG: return "'<<'";
    case TK_RAGG: return "'>>'";
    case TK_BANG: return "'!'";
    case TK_EQ: return "'='";
    case TK_NE: return "'!='";
    case TK_LT: return "'<'";
    case TK_LE: return "'<='";
    case TK_GT: return "'>'";
    case TK_GE: return "'>='";
    case TK_PLUS: return "'+'";
    case TK_MINUS: return "'-'";
    case TK_STAR: return "'*'";
    case TK_SLASH: return "'/'";
    case TK_PERCENT: return "'%'";
    case TK_ANDAND: return "'&&'";
    case TK_OROR: return "'||'";
    case TK_AT: return "'@'";
    case YYNTOKEN: return "an expression";
    case YYNTOKEN + 1: return "an operator";
    default: return "a token";
    }
}

/* Would the parser, in its current configuration, accept token t next?
 * Simulates the reductions t would trigger on a copy of the state stack
 * (the tables use default reductions, so the top state alone can mislead). */
static bool token_acceptable(yyParser *p, int t)
{
    int depth = (int)(p->yytos - p->yystack) + 1;
    YYACTIONTYPE *states = rf_malloc(((size_t)depth + 2) * sizeof *states);
    for (int i = 0; i < depth; i++)
        states[i] = p->yystack[i].stateno;
    bool ok = false;
    for (int steps = 0; steps < 10000; steps++) {
        YYACTIONTYPE act = yy_find_shift_action((YYCODETYPE)t, states[depth - 1]);
        if (act >= YY_MIN_REDUCE) {
            int rule = act - YY_MIN_REDUCE;
            depth += yyRuleInfoNRhs[rule];
            if (depth < 1)
                break;
            if (yyRuleInfoNRhs[rule] == 0)
                states = rf_realloc(states, ((size_t)depth + 2) * sizeof *states);
            states[depth] = yy_find_reduce_action(states[depth - 1], yyRuleInfoLhs[rule]);
            depth++;
            continue;
        }
        ok = act <= YY_MAX_SHIFTREDUCE || act == YY_ACCEPT_ACTION;
        break;
    }
    free(states);
    return ok;
}

static void report_syntax_error(struct yyParser *parser, int major, rf_token tok)
{
    rf_parse_state *ps = parser->ps;
    if (ps->failed)
        return;
    ps->failed = true;
    /* Tokens that can start an expression are listed as one item. */
    static const int expr_start[] = { TK_IDENT, TK_WILDCARD, TK_INT, TK_FLOAT, TK_STRING,
                                      TK_TRUE, TK_FALSE, TK_LPAREN, TK_MINUS };
    int nstart = (int)(sizeof expr_start / sizeof expr_start[0]);
    bool acceptable[YYNTOKEN];
    for (int t = 0; t < YYNTOKEN; t++)
        acceptable[t] = token_acceptable(parser, t);
    bool any_expr = true;
    for (int i = 0; i < nstart; i++)
        any_expr &= acceptable[expr_start[i]];
    if (any_expr)
        for (int i = 0; i < nstart; i++)
            acceptable[expr_start[i]] = false;
    /* After an expression, the operators that may follow it are one item. */
    static const int binops[] = { TK_PLUS, TK_MINUS, TK_STAR, TK_SLASH, TK_PERCENT, TK_ANDAND, TK_OROR };
    static const int cmpops[] = { TK_EQ, TK_NE, TK_LT, TK_LE, TK_GT, TK_GE };
    int nbinops = (int)(sizeof binops / sizeof binops[0]), ncmpops = (int)(sizeof cmpops / sizeof cmpops[0]);
    bool any_op = true;
    for (int i = 0; i < nbinops; i++)
        any_op &= acceptable[binops[i]];
    if (any_op) {
        for (int i = 0; i < nbinops; i++)
            acceptable[binops[i]] = false;
        for (int i = 0; i < ncmpops; i++)
            acceptable[cmpops[i]] = false;
    }
    int expected[YYNTOKEN + 2], nexpected = 0;
    for (int t = 0; t < YYNTOKEN; t++)
        if (acceptable[t])
            expected[nexpected++] = t;
    if (any_expr)
        expected[nexpected++] = YYNTOKEN; /* "an expression" */
    if (any_op)
        expected[nexpected++] = YYNTOKEN + 1; /* "an operator" */
    char found[96];
    if (major == TK_IDENT || major == TK_INT || major == TK_FLOAT)
        snprintf(found, sizeof found, "'%.*s'", tok.len > 40 ? 40 : tok.len, tok.start);
    else
        snprintf(found, sizeof found, "%s", token_desc(major));
    char msg[512];
    int n = snprintf(msg, sizeof msg, "syntax error: unexpected %s", found);
    if (nexpected > 0 && nexpected <= 8) {
        n += snprintf(msg + n, sizeof msg - (size_t)n, ", expected ");
        for (int i = 0; i < nexpected; i++) {
            const char *sep = i == 0 ? "" : i == nexpected - 1 ? " or " : ", ";
            n += snprintf(msg + n, sizeof msg - (size_t)n, "%s%s", sep, token_desc(expected[i]));
        }
    }
    rf_diag_error(ps->diag, tok.loc, "%s", msg);
}
}
