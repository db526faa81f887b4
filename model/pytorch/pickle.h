/* A data-only unpickler for the pickles PyTorch writes (data.pkl,
 * constants.pkl, bytecode.pkl, legacy torch.save streams).
 *
 * Nothing is ever executed: GLOBAL names are kept as strings, REDUCE of a
 * known torch global (_rebuild_tensor_v2, OrderedDict, build_intlist…) is
 * interpreted, any other REDUCE becomes an opaque value that remembers the
 * qualified name and its arguments. Hostile input (huge sizes, deep
 * nesting, bad memo indices, stack underflow, recursive structures) ends in
 * an error that names the byte offset. */
#pragma once

#include <gio/gio.h>
#include "ir/dtype.h"

G_BEGIN_DECLS

typedef enum {
  GRAFT_PICKLE_NONE,
  GRAFT_PICKLE_BOOL,
  GRAFT_PICKLE_INT,
  GRAFT_PICKLE_BIGINT,     /* integer wider than 64 bits: raw little-endian bytes in .s */
  GRAFT_PICKLE_FLOAT,
  GRAFT_PICKLE_STRING,
  GRAFT_PICKLE_BYTES,
  GRAFT_PICKLE_TUPLE,
  GRAFT_PICKLE_LIST,       /* also sets */
  GRAFT_PICKLE_DICT,       /* items = key, value, key, value… */
  GRAFT_PICKLE_GLOBAL,     /* .s = "module.name" */
  GRAFT_PICKLE_OBJECT,     /* NEWOBJ of a class: .s = class, .items = args, .state = BUILD argument */
  GRAFT_PICKLE_OPAQUE,     /* REDUCE of an unknown global: .s = qualified name, .state = args tuple */
  GRAFT_PICKLE_STORAGE,    /* persistent id of a storage */
  GRAFT_PICKLE_TENSOR,
} GraftPickleKind;

typedef struct _GraftPickleValue GraftPickleValue;

typedef struct {
  char *key;               /* record name below data/ or constants/ */
  char *storage_class;     /* "FloatStorage" */
  char *location;          /* "cpu" */
  GraftDType dtype;
  gint64 numel;            /* elements */
} GraftPickleStorage;

typedef struct {
  GraftPickleValue *storage;   /* GRAFT_PICKLE_STORAGE */
  gint64 offset;               /* elements */
  int rank;
  gint64 *sizes;
  gint64 *strides;
  gboolean requires_grad;
  gboolean is_parameter;       /* came through _rebuild_parameter */
  GraftDType dtype;            /* from the storage, or the v3 dtype argument */
} GraftPickleTensor;

struct _GraftPickleValue {
  /*< private >*/
  gint ref_count;
  guint depth;             /* nesting depth, bounded */
  gboolean sealed;         /* stored inside another container */

  /*< public >*/
  GraftPickleKind kind;
  gint64 i;                /* INT, BOOL */
  double f;                /* FLOAT */
  char *s;                 /* STRING, BYTES, BIGINT, GLOBAL, OBJECT, OPAQUE */
  gsize s_len;
  GPtrArray *items;        /* TUPLE, LIST, DICT, OBJECT args: GraftPickleValue* */
  GraftPickleValue *state; /* OBJECT, OPAQUE */
  GraftPickleStorage *storage;
  GraftPickleTensor *tensor;
};

#define GRAFT_PICKLE_MAX_DEPTH 400

GraftPickleValue *graft_pickle_value_ref (GraftPickleValue *value);
void graft_pickle_value_unref (GraftPickleValue *value);

/* What the pickles of one load may spend: values created (an empty tuple
 * costs 1 opcode byte in the file and ~100 bytes here) and a cancellable
 * checked every few thousand opcodes. */
typedef struct {
  GCancellable *cancellable;
  guint64 values_left;
} GraftPickleBudget;

#define GRAFT_PICKLE_MAX_VALUES (1u << 22)

void graft_pickle_budget_init (GraftPickleBudget *budget, GCancellable *cancellable);

/* Unpickles one pickle from data. where names it in messages ("model.pt:
 * data.pkl"). consumed (may be NULL) receives the bytes used, for streams of
 * back-to-back pickles. The pickle gets a budget of its own. */
GraftPickleValue *graft_pickle_load (const guint8 *data, gsize len, const char *where,
                                     gsize *consumed, GError **error);

/* The same, spending from budget (shared by the pickles of one load). */
GraftPickleValue *graft_pickle_load_budgeted (const guint8 *data, gsize len, const char *where,
                                              gsize *consumed, GraftPickleBudget *budget, GError **error);


/* The first GLOBAL of a pickle ("collections.OrderedDict"), for telling
 * file kinds apart without unpickling; NULL if none in the first bytes. */
char *graft_pickle_peek_first_global (const guint8 *data, gsize len);

/* Helpers */
gboolean graft_pickle_value_is_string (GraftPickleValue *value, const char *s);
GraftPickleValue *graft_pickle_dict_lookup (GraftPickleValue *dict, const char *key);
const char *graft_pickle_value_get_string (GraftPickleValue *value); /* NULL unless STRING */
guint graft_pickle_value_get_length (GraftPickleValue *value);       /* TUPLE/LIST items, DICT pairs */
GraftPickleValue *graft_pickle_value_get_item (GraftPickleValue *value, guint i);

GraftDType graft_pickle_storage_class_to_dtype (const char *storage_class);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftPickleValue, graft_pickle_value_unref)

G_END_DECLS
