/* Lexer and parser for the Python subset TorchScript's printer writes into
 * code/ (torch/csrc/jit/serialization/python_print.cpp): classes, defs
 * with annotations, assignments, if/else, for/while, return, calls,
 * subscripts and literals. The result is a small AST the builder walks. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  /* expressions */
  SCRIPT_NAME,        /* s */
  SCRIPT_INT,         /* i */
  SCRIPT_FLOAT,       /* f */
  SCRIPT_STRING,      /* s */
  SCRIPT_BOOL,        /* i */
  SCRIPT_NONE,
  SCRIPT_ELLIPSIS,
  SCRIPT_ATTRIBUTE,   /* a.s */
  SCRIPT_CALL,        /* a(items…, kwargs) ; names[i] = keyword or NULL */
  SCRIPT_SUBSCRIPT,   /* a[b]; flag = the base was written in parentheses */
  SCRIPT_SLICE,       /* a:b:c inside a subscript (a, b, c may be NULL) */
  SCRIPT_TUPLE,       /* items */
  SCRIPT_LIST,        /* items */
  SCRIPT_DICT,        /* items = k, v, k, v… */
  SCRIPT_UNARY,       /* s = "-", "not"; a */
  SCRIPT_BINARY,      /* s = operator; a, b */
  /* statements */
  SCRIPT_ASSIGN,      /* targets = items (flag: trailing comma = unpack); values in a (TUPLE if several); b = annotation */
  SCRIPT_EXPR,        /* a */
  SCRIPT_IF,          /* a = condition; body; orelse */
  SCRIPT_FOR,         /* items = targets; a = iterable; body */
  SCRIPT_WHILE,       /* a = condition; body */
  SCRIPT_RETURN,      /* a (may be NULL) */
  SCRIPT_PASS,
  SCRIPT_BREAK,
  SCRIPT_CONTINUE,
  SCRIPT_RAISE,       /* a */
  SCRIPT_DEF,         /* s = name; params = SCRIPT_PARAM nodes; b = return type; body */
  SCRIPT_PARAM,       /* s = name; a = type (may be NULL); b = default (may be NULL) */
  SCRIPT_CLASS,       /* s = name; items = bases; body */
  SCRIPT_IMPORT,
} ScriptKind;

typedef struct _ScriptNode ScriptNode;

struct _ScriptNode {
  ScriptKind kind;
  guint line;
  char *s;
  gint64 i;
  double f;
  gboolean flag;
  ScriptNode *a, *b, *c;
  GPtrArray *items;   /* ScriptNode* */
  GPtrArray *names;   /* char* or NULL, parallel to items (call keywords) */
  GPtrArray *body;    /* ScriptNode* statements */
  GPtrArray *orelse;
  GPtrArray *params;
  guint height;       /* expressions: 1 + the tallest child expression, at most the parser's limit */
};

void script_node_free (ScriptNode *node);

typedef struct {
  char *path;          /* "code/__torch__/torchvision/models/resnet.py" */
  GPtrArray *body;     /* top-level statements */
} ScriptModule;

/* Parses one code file. path names it in errors ("file.pt: code/…py line 12"). */
ScriptModule *script_module_parse (const char *text, gsize len, const char *path, GError **error);
void script_module_free (ScriptModule *module);

/* The dotted name of an expression made of names and attributes
 * ("torch.nn.functional.relu"), or NULL. */
char *script_node_dotted_name (const ScriptNode *node);

/* Source text of a type expression ("List[int]", "Optional[Tensor]"). */
char *script_node_to_type_string (const ScriptNode *node);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ScriptNode, script_node_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (ScriptModule, script_module_free)

G_END_DECLS
