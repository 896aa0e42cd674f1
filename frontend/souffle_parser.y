/* The Soufflé dialect's grammar (Lemon). Actions build the Soufflé-shaped
 * tree of souffle.h; souffle.c translates it into the LogiQL syntax tree
 * and reports what the grammar cannot see (unknown functors, types,
 * qualifiers). Finished clauses are appended as they are reduced, so a
 * syntax error loses only its own clause (the driver skips the rest). */

%name rf_SouffleParse
%token_prefix SF_
%token_type { rf_token }
%extra_argument { sf_parse_state *ps }
%stack_size 1000

%include {
#include "souffle.h"
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

static rf_token *token_copy(rf_token t)
{
    rf_token *c = rf_malloc(sizeof *c);
    *c = t;
    return c;
}

static ast_expr *leaf(ast_expr_kind kind, rf_token t)
{
    return ast_expr_new(kind, t.loc);
}

static ast_expr *depth_checked(sf_parse_state *ps, ast_expr *e)
{
    if (e->depth > RF_MAX_EXPR_DEPTH && !ps->too_deep_reported) {
        ps->too_deep_reported = true;
        rf_diag_error(ps->diag, e->loc, "expression nested too deeply (more than %d levels)",
                      RF_MAX_EXPR_DEPTH);
    }
    return e;
}

static ast_expr *binary(sf_parse_state *ps, rf_exop op, ast_expr *a, ast_expr *b)
{
    return depth_checked(ps, ast_expr_binary(op, a, b));
}

/* Decimal, 0x hex or 0b binary digits, with Soufflé's optional `u`
 * (unsigned) suffix; the value is the magnitude of an AST_INT. */
static ast_expr *int_literal(rf_token t)
{
    ast_expr *e = leaf(AST_INT, t);
    const char *p = t.start, *end = t.start + t.len;
    unsigned base = 10;
    if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'b')) {
        base = p[1] == 'x' ? 16 : 2;
        p += 2;
    }
    if (end > p && end[-1] == 'u')
        end--;
    uint64_t v = 0;
    for (; p < end; p++) {
        unsigned d = *p >= 'a' ? (unsigned)(*p - 'a' + 10) : *p >= 'A' ? (unsigned)(*p - 'A' + 10)
                                                                        : (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / base) {
            e->too_big = true;
            break;
        }
        v = v * base + d;
    }
    e->magnitude = v;
    return e;
}

static ast_expr *float_literal(rf_token t)
{
    ast_expr *e = leaf(AST_FLOAT, t);
    char *text = token_text(t);
    const char *why;
    e->too_big = !rf_float64_parse(text, strlen(text), &e->fval, &why);
    e->text = text;
    e->textlen = strlen(text);
    return e;
}

static ast_expr *string_literal(rf_token t)
{
    ast_expr *e = leaf(AST_STRING, t);
    size_t body = (size_t)t.len - (t.unterminated ? 1 : 2);
    e->text = rf_lexer_decode_string(t.start + 1, body, &e->textlen);
    return e;
}

/* An aggregate in an expression: recorded in ps->aggs, standing in the
 * expression as the variable "$aggN" that its translation binds. */
static ast_expr *aggregate(sf_parse_state *ps, sf_aggfn fn, rf_token kw, ast_expr *target, sf_body *body)
{
    sf_agg *a = rf_calloc(1, sizeof *a);
    a->fn = fn;
    a->target = target;
    a->body = body;
    a->loc = kw.loc;
    ast_expr *e = leaf(AST_VAR, kw);
    e->text = rf_sprintf("$agg%d", ps->aggs->len);
    e->textlen = strlen(e->text);
    ast_list_push(ps->aggs, a);
    return e;
}

static void add_clause(sf_parse_state *ps, sf_clause *c)
{
    ast_list_push(ps->clauses, c);
}

static void free_token_any(void *t) { free(t); }
static void free_attr_any(void *p)
{
    sf_attr *a = p;
    free(a->name);
    free(a->type);
    free(a);
}
static void free_kvp_any(void *p)
{
    sf_kvp *k = p;
    free(k->key);
    free(k->value);
    free(k);
}
}

%syntax_error {
    report_syntax_error(yypParser, yymajor, TOKEN);
}

%stack_overflow {
    if (!ps->failed)
        rf_diag_error(ps->diag, ps->cur_loc, "program nested too deeply");
    ps->failed = true;
}

/* `( e )` inside a body is the parenthesised expression (shift), never a
 * parenthesised body of one literal: LITERAL_END ranks below RPAREN. */
%nonassoc LITERAL_END.
%nonassoc RPAREN.
%left PLUS MINUS.
%left STAR SLASH PERCENT.
%right CARET.
%right UMINUS.

%type atom { ast_atom * }
%destructor atom { ast_atom_free($$); }
%type heads { ast_list * }
%destructor heads { ast_list_free($$, ast_atom_free_any); }
%type args { ast_list * }
%destructor args { ast_list_free($$, ast_expr_free_any); }
%type arglist { ast_list * }
%destructor arglist { ast_list_free($$, ast_expr_free_any); }
%type expr { ast_expr * }
%destructor expr { ast_expr_free($$); }
%type literal { ast_literal * }
%destructor literal { ast_literal_free($$); }
%type term { sf_body * }
%destructor term { sf_body_free($$); }
%type conj { sf_body * }
%destructor conj { sf_body_free($$); }
%type body { sf_body * }
%destructor body { sf_body_free($$); }
%type aggbody { sf_body * }
%destructor aggbody { sf_body_free($$); }
%type attrs { ast_list * }
%destructor attrs { ast_list_free($$, free_attr_any); }
%type attrlist { ast_list * }
%destructor attrlist { ast_list_free($$, free_attr_any); }
%type quals { ast_list * }
%destructor quals { ast_list_free($$, free_token_any); }
%type names { ast_list * }
%destructor names { ast_list_free($$, free_token_any); }
%type typeunion { ast_list * }
%destructor typeunion { ast_list_free($$, free_token_any); }
%type iospec { ast_list * }
%destructor iospec { ast_list_free($$, free_kvp_any); }
%type kvps { ast_list * }
%destructor kvps { ast_list_free($$, free_kvp_any); }
%type kvp { sf_kvp * }
%destructor kvp { free_kvp_any($$); }

program ::= clauses.
clauses ::= .
clauses ::= clauses clause.
/* Never fed: the driver reports SF_UNSUPPORTED tokens itself (souffle.c).
 * The rule only makes Lemon define the token. */
clause ::= UNSUPPORTED.

/* .decl edge(x: number, y: symbol) btree */
clause ::= DECL(D) IDENT(N) LPAREN attrs(A) RPAREN quals(Q). {
    sf_clause *c = rf_calloc(1, sizeof *c);
    c->kind = SF_DECL;
    c->loc = ast_loc_span(D.loc, N.loc);
    c->name = token_text(N);
    c->name_loc = N.loc;
    c->attrs = A;
    c->quals = Q;
    add_clause(ps, c);
}
attrs(L) ::= . { L = ast_list_new(); }
attrs(L) ::= attrlist(X). { L = X; }
attrlist(L) ::= IDENT(N) COLON IDENT(T). {
    L = ast_list_new();
    sf_attr *a = rf_calloc(1, sizeof *a);
    a->name = token_text(N);
    a->type = token_text(T);
    a->name_loc = N.loc;
    a->type_loc = T.loc;
    ast_list_push(L, a);
}
attrlist(L) ::= attrlist(X) COMMA IDENT(N) COLON IDENT(T). {
    L = X;
    sf_attr *a = rf_calloc(1, sizeof *a);
    a->name = token_text(N);
    a->type = token_text(T);
    a->name_loc = N.loc;
    a->type_loc = T.loc;
    ast_list_push(L, a);
}
quals(L) ::= . { L = ast_list_new(); }
quals(L) ::= quals(X) QUALIFIER(Q). { L = X; ast_list_push(L, token_copy(Q)); }

/* .type Name <: symbol    .type Name = number    .type Name = A | B */
clause ::= TYPE(D) IDENT(N) SUBTYPE IDENT(B). {
    sf_clause *c = rf_calloc(1, sizeof *c);
    c->kind = SF_TYPE;
    c->loc = ast_loc_span(D.loc, N.loc);
    c->name = token_text(N);
    c->name_loc = N.loc;
    c->subtype = true;
    c->members = ast_list_new();
    ast_list_push(c->members, token_copy(B));
    add_clause(ps, c);
}
clause ::= TYPE(D) IDENT(N) EQ typeunion(U). {
    sf_clause *c = rf_calloc(1, sizeof *c);
    c->kind = SF_TYPE;
    c->loc = ast_loc_span(D.loc, N.loc);
    c->name = token_text(N);
    c->name_loc = N.loc;
    c->members = U;
    add_clause(ps, c);
}
/* .number_type Name, .symbol_type Name (Soufflé 1's spellings) */
clause ::= TYPE(D) IDENT(N). {
    sf_clause *c = rf_calloc(1, sizeof *c);
    c->kind = SF_TYPE;
    c->loc = ast_loc_span(D.loc, N.loc);
    c->name = token_text(N);
    c->name_loc = N.loc;
    c->subtype = true;
    c->members = ast_list_new();
    if (D.len == 5) {
        sf_unsupported(ps, N.loc, ".type %.*s needs '<: base' or '= types'", N.len, N.start);
    } else {
        /* the base type named by the directive: number or symbol */
        rf_token base = D;
        base.start = D.start + 1;
        base.len = D.len - 6;
        ast_list_push(c->members, token_copy(base));
    }
    add_clause(ps, c);
}
typeunion(L) ::= IDENT(T). { L = ast_list_new(); ast_list_push(L, token_copy(T)); }
typeunion(L) ::= typeunion(X) PIPE IDENT(T). { L = X; ast_list_push(L, token_copy(T)); }

/* .input edge    .output a, b(IO=file, filename="x.csv", delimiter=",")    .printsize p */
clause ::= IODIR(D) names(L) iospec(K). {
    sf_clause *c = rf_calloc(1, sizeof *c);
    c->kind = SF_IO;
    c->loc = D.loc;
    c->io = D.len == 6 ? SF_IO_INPUT : D.len == 7 ? SF_IO_OUTPUT : SF_IO_PRINTSIZE;
    c->rels = L;
    c->kvps = K;
    add_clause(ps, c);
}
names(L) ::= IDENT(N). { L = ast_list_new(); ast_list_push(L, token_copy(N)); }
names(L) ::= names(X) COMMA IDENT(N). { L = X; ast_list_push(L, token_copy(N)); }
iospec(L) ::= . { L = ast_list_new(); }
iospec(L) ::= LPAREN RPAREN. { L = ast_list_new(); }
iospec(L) ::= LPAREN kvps(X) RPAREN. { L = X; }
kvps(L) ::= kvp(K). { L = ast_list_new(); ast_list_push(L, K); }
kvps(L) ::= kvps(X) COMMA kvp(K). { L = X; ast_list_push(L, K); }
kvp(K) ::= IDENT(N) EQ STRING(S). {
    K = rf_calloc(1, sizeof *K);
    K->key = token_text(N);
    K->key_loc = N.loc;
    size_t len;
    K->value = rf_lexer_decode_string(S.start + 1, (size_t)S.len - (S.unterminated ? 1 : 2), &len);
    K->value_loc = S.loc;
}
kvp(K) ::= IDENT(N) EQ IDENT(V). {
    K = rf_calloc(1, sizeof *K);
    K->key = token_text(N);
    K->key_loc = N.loc;
    K->value = token_text(V);
    K->value_loc = V.loc;
}
kvp(K) ::= IDENT(N) EQ INT(V). {
    K = rf_calloc(1, sizeof *K);
    K->key = token_text(N);
    K->key_loc = N.loc;
    K->value = token_text(V);
    K->value_loc = V.loc;
}
kvp(K) ::= IDENT(N) EQ TRUE(V). {
    K = rf_calloc(1, sizeof *K);
    K->key = token_text(N);
    K->key_loc = N.loc;
    K->value = token_text(V);
    K->value_loc = V.loc;
}
kvp(K) ::= IDENT(N) EQ FALSE(V). {
    K = rf_calloc(1, sizeof *K);
    K->key = token_text(N);
    K->key_loc = N.loc;
    K->value = token_text(V);
    K->value_loc = V.loc;
}

/* edge(1, 2). */
clause ::= atom(H) DOT. {
    sf_clause *c = rf_calloc(1, sizeof *c);
    c->kind = SF_FACT;
    c->loc = H->loc;
    c->heads = ast_list_new();
    ast_list_push(c->heads, H);
    add_clause(ps, c);
}
/* path(x, z) :- path(x, y), edge(y, z).    a(x), b(x) :- c(x). */
clause ::= heads(H) IF body(B) DOT. {
    sf_clause *c = rf_calloc(1, sizeof *c);
    c->kind = SF_RULE;
    c->loc = ((ast_atom *)H->items[0])->loc;
    c->heads = H;
    c->body = B;
    add_clause(ps, c);
}
heads(L) ::= atom(A). { L = ast_list_new(); ast_list_push(L, A); }
heads(L) ::= heads(X) COMMA atom(A). { L = X; ast_list_push(L, A); }

atom(A) ::= IDENT(N) LPAREN args(L) RPAREN(R). {
    A = ast_atom_new(token_text(N), N.loc, L, false);
    A->loc = ast_loc_span(N.loc, R.loc);
}
args(L) ::= . { L = ast_list_new(); }
args(L) ::= arglist(X). { L = X; }
arglist(L) ::= expr(E). { L = ast_list_new(); ast_list_push(L, E); }
arglist(L) ::= arglist(X) COMMA expr(E). { L = X; ast_list_push(L, E); }

/* Bodies: `,` binds tighter than `;`; parentheses group. */
body(B) ::= conj(C). { B = C; }
body(B) ::= body(X) SEMI conj(C). { B = sf_body_or(X, C); }
conj(B) ::= term(T). { B = T; }
conj(B) ::= conj(X) COMMA term(T). { B = sf_body_and(ps, X, T); }
term(B) ::= literal(L). { B = sf_body_single(L); }
term(B) ::= LPAREN body(X) RPAREN. { B = X; }

/* A literal is an atom or a constraint: a call written alone, p(x), is an
 * atom or a constraint functor (contains, match), which souffle.c tells
 * apart by its name; anything else alone is an error there. */
literal(L) ::= expr(E). [LITERAL_END] {
    if (E->kind == AST_CALL)
        L = ast_literal_new(AST_LIT_ATOM, ast_atom_from_call(E), NULL);
    else
        L = ast_literal_new(AST_LIT_COND, NULL, E);
}
literal(L) ::= BANG(B) expr(E). [LITERAL_END] {
    rf_loc whole = ast_loc_span(B.loc, E->loc);
    if (E->kind == AST_CALL) {
        L = ast_literal_new(AST_LIT_NEGATED, ast_atom_from_call(E), NULL);
    } else {
        L = ast_literal_new(AST_LIT_COND, NULL, E);
        sf_unsupported(ps, B.loc, "'!' applies to an atom or a constraint functor only");
    }
    L->loc = whole;
}
literal(L) ::= expr(A) EQ expr(B). { L = ast_literal_new(AST_LIT_COND, NULL, binary(ps, RF_EX_EQ, A, B)); }
literal(L) ::= expr(A) NE expr(B). { L = ast_literal_new(AST_LIT_COND, NULL, binary(ps, RF_EX_NE, A, B)); }
literal(L) ::= expr(A) LT expr(B). { L = ast_literal_new(AST_LIT_COND, NULL, binary(ps, RF_EX_LT, A, B)); }
literal(L) ::= expr(A) LE expr(B). { L = ast_literal_new(AST_LIT_COND, NULL, binary(ps, RF_EX_LE, A, B)); }
literal(L) ::= expr(A) GT expr(B). { L = ast_literal_new(AST_LIT_COND, NULL, binary(ps, RF_EX_GT, A, B)); }
literal(L) ::= expr(A) GE expr(B). { L = ast_literal_new(AST_LIT_COND, NULL, binary(ps, RF_EX_GE, A, B)); }
literal(L) ::= TRUE(T). {
    ast_expr *e = leaf(AST_BOOL, T);
    e->bval = true;
    L = ast_literal_new(AST_LIT_COND, NULL, e);
}
literal(L) ::= FALSE(T). { L = ast_literal_new(AST_LIT_COND, NULL, leaf(AST_BOOL, T)); }

expr(E) ::= expr(A) PLUS expr(B). { E = binary(ps, RF_EX_ADD, A, B); }
expr(E) ::= expr(A) MINUS expr(B). { E = binary(ps, RF_EX_SUB, A, B); }
expr(E) ::= expr(A) STAR expr(B). { E = binary(ps, RF_EX_MUL, A, B); }
expr(E) ::= expr(A) SLASH expr(B). { E = binary(ps, RF_EX_DIV, A, B); }
expr(E) ::= expr(A) PERCENT expr(B). { E = binary(ps, RF_EX_MOD, A, B); }
expr(E) ::= expr(A) CARET(C) expr(B). {
    E = binary(ps, RF_EX_MUL, A, B);
    sf_unsupported(ps, C.loc, "the power operator '^' is not supported (Red Fox has no exponentiation)");
}
expr(E) ::= MINUS(M) expr(A). [UMINUS] { E = depth_checked(ps, ast_expr_negate(A, M.loc)); }
expr(E) ::= LPAREN(L) expr(A) RPAREN(R). { E = A; E->loc = ast_loc_span(L.loc, R.loc); E->parens = true; }
expr(E) ::= IDENT(N). { E = leaf(AST_VAR, N); E->text = token_text(N); E->textlen = (size_t)N.len; }
/* An atom, a constraint or a functor: cat(a, b), strlen(s), ... */
expr(E) ::= IDENT(N) LPAREN args(L) RPAREN(R). {
    E = depth_checked(ps, ast_expr_call(token_text(N), N.loc, NULL, L, R.loc));
}
/* The functors min(a, b, ...) and max(a, b, ...): two arguments or more,
 * which keeps them apart from the aggregates `min (x) : ...`. */
expr(E) ::= MIN(N) LPAREN expr(A) COMMA arglist(L) RPAREN(R). {
    ast_list *all = ast_list_new();
    ast_list_push(all, A);
    for (int i = 0; i < L->len; i++)
        ast_list_push(all, L->items[i]);
    L->len = 0;
    ast_list_free(L, ast_expr_free_any);
    E = depth_checked(ps, ast_expr_call(rf_strdup("min"), N.loc, NULL, all, R.loc));
}
expr(E) ::= MAX(N) LPAREN expr(A) COMMA arglist(L) RPAREN(R). {
    ast_list *all = ast_list_new();
    ast_list_push(all, A);
    for (int i = 0; i < L->len; i++)
        ast_list_push(all, L->items[i]);
    L->len = 0;
    ast_list_free(L, ast_expr_free_any);
    E = depth_checked(ps, ast_expr_call(rf_strdup("max"), N.loc, NULL, all, R.loc));
}
expr(E) ::= WILDCARD(W). { E = leaf(AST_WILDCARD, W); }
expr(E) ::= INT(N). { E = int_literal(N); }
expr(E) ::= FLOAT(N). { E = float_literal(N); }
expr(E) ::= STRING(S). { E = string_literal(S); }

/* Aggregates: count : { body }, sum e : { body }, min e : atom, ... */
expr(E) ::= COUNT(K) COLON aggbody(B). { E = aggregate(ps, SF_AGG_COUNT, K, NULL, B); }
expr(E) ::= SUM(K) expr(T) COLON aggbody(B). { E = aggregate(ps, SF_AGG_SUM, K, T, B); }
expr(E) ::= MIN(K) expr(T) COLON aggbody(B). { E = aggregate(ps, SF_AGG_MIN, K, T, B); }
expr(E) ::= MAX(K) expr(T) COLON aggbody(B). { E = aggregate(ps, SF_AGG_MAX, K, T, B); }
expr(E) ::= MEAN(K) expr(T) COLON aggbody(B). { E = aggregate(ps, SF_AGG_MEAN, K, T, B); }
aggbody(B) ::= atom(A). { B = sf_body_single(ast_literal_new(AST_LIT_ATOM, A, NULL)); }
aggbody(B) ::= LBRACE body(X) RBRACE. { B = X; }

%code {
static const char *token_desc(int major)
{
    switch (major) {
    case 0: return "end of input";
    case SF_IDENT: return "a name";
    case SF_INT: return "an integer";
    case SF_FLOAT: return "a number";
    case SF_STRING: return "a string";
    case SF_TRUE: return "'true'";
    case SF_FALSE: return "'false'";
    case SF_WILDCARD: return "'_'";
    case SF_DECL: return "'.decl'";
    case SF_TYPE: return "'.type'";
    case SF_IODIR: return "'.input'/'.output'/'.printsize'";
    case SF_QUALIFIER: return "a qualifier";
    case SF_COUNT: return "'count'";
    case SF_SUM: return "'sum'";
    case SF_MIN: return "'min'";
    case SF_MAX: return "'max'";
    case SF_MEAN: return "'mean'";
    case SF_DOT: return "'.'";
    case SF_COMMA: return "','";
    case SF_SEMI: return "';'";
    case SF_IF: return "':-'";
    case SF_SUBTYPE: return "'<:'";
    case SF_COLON: return "':'";
    case SF_PIPE: return "'|'";
    case SF_LPAREN: return "'('";
    case SF_RPAREN: return "')'";
    case SF_LBRACE: return "'{'";
    case SF_RBRACE: return "'}'";
    case SF_BANG: return "'!'";
    case SF_EQ: return "'='";
    case SF_NE: return "'!='";
    case SF_LT: return "'<'";
    case SF_LE: return "'<='";
    case SF_GT: return "'>'";
    case SF_GE: return "'>='";
    case SF_PLUS: return "'+'";
    case SF_MINUS: return "'-'";
    case SF_STAR: return "'*'";
    case SF_SLASH: return "'/'";
    case SF_PERCENT: return "'%'";
    case SF_CARET: return "'^'";
    case YYNTOKEN: return "an expression";
    case YYNTOKEN + 1: return "an operator";
    default: return "a token";
    }
}

/* As in parser.y: would the parser accept token t next? */
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
    sf_parse_state *ps = parser->ps;
    if (ps->failed)
        return;
    ps->failed = true;
    static const int expr_start[] = { SF_IDENT, SF_WILDCARD, SF_INT, SF_FLOAT, SF_STRING, SF_LPAREN,
                                      SF_MINUS, SF_COUNT, SF_SUM, SF_MIN, SF_MAX, SF_MEAN };
    int nstart = (int)(sizeof expr_start / sizeof expr_start[0]);
    bool acceptable[YYNTOKEN];
    for (int t = 0; t < YYNTOKEN; t++)
        acceptable[t] = t != SF_UNSUPPORTED && token_acceptable(parser, t);
    bool any_expr = true;
    for (int i = 0; i < nstart; i++)
        any_expr &= acceptable[expr_start[i]];
    if (any_expr)
        for (int i = 0; i < nstart; i++)
            acceptable[expr_start[i]] = false;
    static const int binops[] = { SF_PLUS, SF_MINUS, SF_STAR, SF_SLASH, SF_PERCENT, SF_CARET };
    static const int cmpops[] = { SF_EQ, SF_NE, SF_LT, SF_LE, SF_GT, SF_GE };
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
        expected[nexpected++] = YYNTOKEN;
    if (any_op)
        expected[nexpected++] = YYNTOKEN + 1;
    char found[96];
    if (major == SF_IDENT || major == SF_INT || major == SF_FLOAT || major == SF_QUALIFIER)
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
