/* The syntax tree the parser builds and the checker consumes. It records
 * what was written (names as text, literals untyped) with a location for
 * every piece, so that every error can point at the offending text. */
#ifndef RF_AST_H
#define RF_AST_H

#include "../common/rf_diag.h"
#include "../common/rf_expr.h"

typedef enum ast_expr_kind {
    AST_INT,        /* integer literal: magnitude and sign, typed by context */
    AST_FLOAT,      /* float literal: always float64 */
    AST_STRING,
    AST_BOOL,
    AST_VAR,
    AST_WILDCARD,   /* _ */
    AST_UNARY,      /* op = RF_EX_NEG */
    AST_BINARY,     /* op = arithmetic, comparison, RF_EX_AND or RF_EX_OR */
    AST_CALL        /* name(args) or name[params](args): a function, a
                       conversion or a date literal (the checker decides) */
} ast_expr_kind;

typedef struct ast_expr {
    ast_expr_kind kind;
    rf_exop op;               /* AST_UNARY, AST_BINARY */
    uint64_t magnitude;       /* AST_INT */
    bool negative;            /* AST_INT: written with a leading minus */
    bool too_big;             /* AST_INT: more than 2^64-1; AST_FLOAT: out of range */
    double fval;              /* AST_FLOAT */
    /* AST_FLOAT written in plain digits (no exponent) with at most 18
     * fraction digits and digits that fit int64: the exact value is
     * magnitude / 10^dec_scale (and `negative`), so that the literal can
     * become a decimal[dec_scale] where it meets a decimal. */
    bool dec_ok;
    int dec_scale;
    bool bval;                /* AST_BOOL */
    char *text;               /* AST_VAR and AST_CALL name; AST_STRING decoded
                                 bytes; AST_FLOAT the literal as written */
    size_t textlen;
    struct ast_expr *a, *b;
    /* AST_CALL: the arguments, and the bracketed parameters of
     * name[params](args) (has_params: brackets were written) */
    int nargs, nparams;
    struct ast_expr **args, **params;
    bool has_params;
    rf_loc name_loc;          /* AST_CALL */
    bool parens;              /* written in parentheses */
    int depth;                /* 1 for a leaf: bounds recursion later */
    int type;                 /* set by the checker (rf_type or its own marker) */
    rf_loc loc;               /* the whole expression */
} ast_expr;

/* p(a, b) or, written functionally, f[k1, k2] = v (args = keys ++ [v]).
 * A type constraint of a declaration may also be name[params](var), as in
 * decimal[2](x) (has_params). */
typedef struct ast_atom {
    char *name;
    rf_loc name_loc;
    rf_loc loc;               /* the whole atom */
    bool functional;
    int nargs;
    ast_expr **args;
    bool has_params;
    int nparams;
    ast_expr **params;
} ast_atom;

typedef enum ast_lit_kind { AST_LIT_ATOM, AST_LIT_NEGATED, AST_LIT_COND } ast_lit_kind;

typedef struct ast_literal {
    ast_lit_kind kind;
    ast_atom *atom;           /* ATOM, NEGATED */
    ast_expr *cond;           /* COND: a comparison */
    rf_loc loc;
} ast_literal;

/* A directive argument: a bare name, a string, a number (its text, with
 * a leading '-' when written so) or a name wrapped in another, as in
 * @order(q, desc(c)): text "c", wrapper "desc". */
typedef struct ast_darg {
    bool is_string;
    bool is_number;
    char *text;
    size_t textlen;
    char *wrapper;            /* NULL unless written wrapper(text) */
    rf_loc loc;               /* the whole argument */
} ast_darg;

/* One aggregate of agg<<var = fn(args), ...>>. */
typedef struct ast_agg {
    char *var, *fn;
    rf_loc var_loc, fn_loc;
    int nargs;
    ast_expr **args;
} ast_agg;

typedef enum ast_clause_kind { AST_DECL, AST_FACT, AST_RULE, AST_DIRECTIVE } ast_clause_kind;

typedef struct ast_clause {
    ast_clause_kind kind;
    rf_loc loc;
    ast_atom *head;           /* DECL, FACT, RULE */
    int nbody;                /* DECL: the type atoms; RULE: the body */
    ast_atom **types;         /* DECL */
    ast_literal **body;       /* RULE */
    /* RULE with agg<<v1 = f1(args), ...>> (has_agg: naggs > 0) */
    bool has_agg;
    int naggs;
    ast_agg **aggs;
    /* DIRECTIVE: @name(args) */
    char *dir_name;
    rf_loc dir_loc;
    int nargs;
    ast_darg **dargs;
} ast_clause;

typedef struct ast_program {
    int nclauses, cap;
    ast_clause **clauses;
} ast_program;

/* A growable list of pointers, used while parsing comma lists. */
typedef struct ast_list {
    int len, cap;
    void **items;
} ast_list;

ast_list *ast_list_new(void);
void ast_list_push(ast_list *l, void *item);
/* Hands the items over (caller frees them) and frees the list itself. */
void **ast_list_take(ast_list *l, int *len);

/* A location covering both a and b (b at or after a). */
rf_loc ast_loc_span(rf_loc a, rf_loc b);

ast_expr *ast_expr_new(ast_expr_kind kind, rf_loc loc);
ast_expr *ast_expr_binary(rf_exop op, ast_expr *a, ast_expr *b);
ast_expr *ast_expr_negate(ast_expr *a, rf_loc minus);
/* name(args) or, with params (may be empty), name[params](args). */
ast_expr *ast_expr_call(char *name, rf_loc name_loc, ast_list *params, ast_list *args, rf_loc end);
/* The operands of an expression: a, b of UNARY/BINARY, the args of CALL. */
int ast_expr_nkids(const ast_expr *e);
ast_expr *ast_expr_kid(const ast_expr *e, int i);
/* Turns a call written at the top of a body literal into the atom it is
 * (frees the call node, keeps its name and arguments). */
ast_atom *ast_atom_from_call(ast_expr *call);
ast_atom *ast_atom_new(char *name, rf_loc name_loc, ast_list *args, bool functional);
ast_literal *ast_literal_new(ast_lit_kind kind, ast_atom *atom, ast_expr *cond);
ast_clause *ast_clause_new(ast_clause_kind kind, rf_loc loc);
void ast_program_add(ast_program *p, ast_clause *c);

void ast_expr_free(ast_expr *e);
void ast_atom_free(ast_atom *a);
void ast_literal_free(ast_literal *l);
void ast_clause_free(ast_clause *c);
void ast_list_free(ast_list *l, void (*free_item)(void *));
void ast_program_free(ast_program *p);

/* Helpers for ast_list_free */
void ast_expr_free_any(void *e);
void ast_atom_free_any(void *a);
void ast_literal_free_any(void *l);
void ast_darg_free_any(void *d);
void ast_agg_free_any(void *a);

#endif
