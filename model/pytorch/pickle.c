#include "pytorch/pickle.h"

#include <string.h>
#include "ir/model-error.h"

#define MAX_MARKS 4096
#define MAX_MEMO (1u << 24)

static GraftPickleValue *
value_new (GraftPickleKind kind)
{
  GraftPickleValue *value = g_new0 (GraftPickleValue, 1);
  value->ref_count = 1;
  value->kind = kind;
  return value;
}

GraftPickleValue *
graft_pickle_value_ref (GraftPickleValue *value)
{
  g_atomic_int_inc (&value->ref_count);
  return value;
}

void
graft_pickle_value_unref (GraftPickleValue *value)
{
  if (value == NULL || !g_atomic_int_dec_and_test (&value->ref_count))
    return;
  g_free (value->s);
  g_clear_pointer (&value->items, g_ptr_array_unref);
  g_clear_pointer (&value->state, graft_pickle_value_unref);
  if (value->storage)
    {
      g_free (value->storage->key);
      g_free (value->storage->storage_class);
      g_free (value->storage->location);
      g_free (value->storage);
    }
  if (value->tensor)
    {
      g_clear_pointer (&value->tensor->storage, graft_pickle_value_unref);
      g_free (value->tensor->sizes);
      g_free (value->tensor->strides);
      g_free (value->tensor);
    }
  g_free (value);
}

static GraftPickleValue *
container_new (GraftPickleKind kind)
{
  GraftPickleValue *value = value_new (kind);
  value->items = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_pickle_value_unref);
  value->depth = 1;
  return value;
}

/* ------------------------------------------------------------------ reader */

typedef struct {
  const guint8 *data;
  gsize len;
  gsize pos;
  gsize op_pos;            /* offset of the current opcode, for messages */
  const char *where;
  GPtrArray *stack;        /* GraftPickleValue*, owned */
  GArray *marks;           /* guint stack positions */
  GPtrArray *memo;         /* GraftPickleValue* or NULL, owned */
  guint64 pushed;          /* values pushed, spent from the budget */
  GraftPickleValue *empty_tuple; /* shared, as in CPython: tuples never change */
  GError **error;
} Unpickler;

G_GNUC_PRINTF (3, 4) static gboolean
fail (Unpickler *u, GraftModelError code, const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (u->error, GRAFT_MODEL_ERROR, code, "%s: pickle byte %" G_GSIZE_FORMAT " (opcode 0x%02x): %s",
               u->where, u->op_pos, u->op_pos < u->len ? u->data[u->op_pos] : 0, message);
  return FALSE;
}

static gboolean
need (Unpickler *u, gsize n)
{
  if (u->len - u->pos < n)
    return fail (u, GRAFT_MODEL_ERROR_TRUNCATED, "needs %" G_GSIZE_FORMAT " more bytes, only %" G_GSIZE_FORMAT " left",
                 n, u->len - u->pos);
  return TRUE;
}

static guint64
take_le (Unpickler *u, guint n)
{
  guint64 v = 0;
  for (guint k = 0; k < n; k++)
    v |= (guint64) u->data[u->pos + k] << (8 * k);
  u->pos += n;
  return v;
}

static void
push (Unpickler *u, GraftPickleValue *value /* transfer full */)
{
  u->pushed++;
  g_ptr_array_add (u->stack, value);
}

static GraftPickleValue *
pop (Unpickler *u)
{
  guint floor = u->marks->len ? g_array_index (u->marks, guint, u->marks->len - 1) : 0;
  if (u->stack->len <= floor)
    {
      fail (u, GRAFT_MODEL_ERROR_MALFORMED, "stack underflow");
      return NULL;
    }
  return g_ptr_array_steal_index (u->stack, u->stack->len - 1);
}

static GraftPickleValue *
top (Unpickler *u)
{
  guint floor = u->marks->len ? g_array_index (u->marks, guint, u->marks->len - 1) : 0;
  if (u->stack->len <= floor)
    {
      fail (u, GRAFT_MODEL_ERROR_MALFORMED, "stack underflow");
      return NULL;
    }
  return g_ptr_array_index (u->stack, u->stack->len - 1);
}

/* Adds child to a container, keeping depth bounded and refusing cycles:
 * a container already stored inside another one is never mutated again
 * (only recursive Python structures do that). */
static gboolean
container_add (Unpickler *u, GraftPickleValue *container, GraftPickleValue *child /* transfer full */)
{
  if (container->sealed)
    {
      graft_pickle_value_unref (child);
      return fail (u, GRAFT_MODEL_ERROR_UNSUPPORTED, "recursive structure (a container is modified after being stored)");
    }
  if (child == container)
    {
      graft_pickle_value_unref (child);
      return fail (u, GRAFT_MODEL_ERROR_UNSUPPORTED, "recursive structure (a container contains itself)");
    }
  if (child->depth + 1 > GRAFT_PICKLE_MAX_DEPTH)
    {
      graft_pickle_value_unref (child);
      return fail (u, GRAFT_MODEL_ERROR_UNSAFE, "nesting deeper than %d levels", GRAFT_PICKLE_MAX_DEPTH);
    }
  child->sealed = TRUE;
  container->depth = MAX (container->depth, child->depth + 1);
  g_ptr_array_add (container->items, child);
  return TRUE;
}

/* Pops everything above the last MARK into a new array. */
static GPtrArray *
pop_mark (Unpickler *u)
{
  if (u->marks->len == 0)
    {
      fail (u, GRAFT_MODEL_ERROR_MALFORMED, "no MARK on the stack");
      return NULL;
    }
  guint start = g_array_index (u->marks, guint, u->marks->len - 1);
  g_array_set_size (u->marks, u->marks->len - 1);
  GPtrArray *items = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_pickle_value_unref);
  for (guint k = start; k < u->stack->len; k++)
    g_ptr_array_add (items, g_ptr_array_index (u->stack, k));
  /* Ownership moved to items. */
  g_ptr_array_set_free_func (u->stack, NULL);
  g_ptr_array_set_size (u->stack, start);
  g_ptr_array_set_free_func (u->stack, (GDestroyNotify) graft_pickle_value_unref);
  return items;
}

static gboolean
push_tuple_of (Unpickler *u, GPtrArray *items /* transfer full */)
{
  GraftPickleValue *tuple = container_new (GRAFT_PICKLE_TUPLE);
  for (guint k = 0; k < items->len; k++)
    if (!container_add (u, tuple, graft_pickle_value_ref (g_ptr_array_index (items, k))))
      {
        g_ptr_array_unref (items);
        graft_pickle_value_unref (tuple);
        return FALSE;
      }
  g_ptr_array_unref (items);
  push (u, tuple);
  return TRUE;
}

static gboolean
push_tuple_n (Unpickler *u, guint n)
{
  GPtrArray *items = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_pickle_value_unref);
  g_ptr_array_set_size (items, n);
  for (guint k = n; k-- > 0;)
    {
      GraftPickleValue *v = pop (u);
      if (v == NULL)
        {
          g_ptr_array_unref (items);
          return FALSE;
        }
      g_ptr_array_index (items, k) = v;
    }
  return push_tuple_of (u, items);
}

static gboolean
add_items (Unpickler *u, GraftPickleValue *container, GPtrArray *items /* transfer full */, gboolean pairs)
{
  gboolean ok = TRUE;
  if (pairs && items->len % 2 != 0)
    ok = fail (u, GRAFT_MODEL_ERROR_MALFORMED, "odd number of items for a dict");
  for (guint k = 0; ok && k < items->len; k++)
    ok = container_add (u, container, graft_pickle_value_ref (g_ptr_array_index (items, k)));
  g_ptr_array_unref (items);
  return ok;
}

GraftDType
graft_pickle_storage_class_to_dtype (const char *name)
{
  static const struct { const char *name; GraftDType dtype; } map[] = {
    { "DoubleStorage", GRAFT_DTYPE_FLOAT64 }, { "FloatStorage", GRAFT_DTYPE_FLOAT32 },
    { "HalfStorage", GRAFT_DTYPE_FLOAT16 }, { "BFloat16Storage", GRAFT_DTYPE_BFLOAT16 },
    { "LongStorage", GRAFT_DTYPE_INT64 }, { "IntStorage", GRAFT_DTYPE_INT32 },
    { "ShortStorage", GRAFT_DTYPE_INT16 }, { "CharStorage", GRAFT_DTYPE_INT8 },
    { "ByteStorage", GRAFT_DTYPE_UINT8 }, { "BoolStorage", GRAFT_DTYPE_BOOL },
    { "ComplexDoubleStorage", GRAFT_DTYPE_COMPLEX128 }, { "ComplexFloatStorage", GRAFT_DTYPE_COMPLEX64 },
    { "QInt8Storage", GRAFT_DTYPE_QINT8 }, { "QInt32Storage", GRAFT_DTYPE_QINT32 },
    { "QUInt8Storage", GRAFT_DTYPE_QUINT8 }, { "QUInt4x2Storage", GRAFT_DTYPE_QUINT4X2 },
    { "QUInt2x4Storage", GRAFT_DTYPE_QUINT2X4 },
  };
  if (name == NULL)
    return GRAFT_DTYPE_UNDEFINED;
  const char *dot = strrchr (name, '.');
  if (dot)
    name = dot + 1;
  for (guint k = 0; k < G_N_ELEMENTS (map); k++)
    if (strcmp (map[k].name, name) == 0)
      return map[k].dtype;
  return GRAFT_DTYPE_UNDEFINED;
}

/* torch.float32 etc. as GLOBAL 'torch float32' (v3 dtype argument). */
static GraftDType
torch_dtype_global (GraftPickleValue *v)
{
  static const struct { const char *name; GraftDType dtype; } map[] = {
    { "torch.float32", GRAFT_DTYPE_FLOAT32 }, { "torch.float", GRAFT_DTYPE_FLOAT32 },
    { "torch.float64", GRAFT_DTYPE_FLOAT64 }, { "torch.double", GRAFT_DTYPE_FLOAT64 },
    { "torch.float16", GRAFT_DTYPE_FLOAT16 }, { "torch.half", GRAFT_DTYPE_FLOAT16 },
    { "torch.bfloat16", GRAFT_DTYPE_BFLOAT16 }, { "torch.int64", GRAFT_DTYPE_INT64 },
    { "torch.long", GRAFT_DTYPE_INT64 }, { "torch.int32", GRAFT_DTYPE_INT32 },
    { "torch.int", GRAFT_DTYPE_INT32 }, { "torch.int16", GRAFT_DTYPE_INT16 },
    { "torch.int8", GRAFT_DTYPE_INT8 }, { "torch.uint8", GRAFT_DTYPE_UINT8 },
    { "torch.bool", GRAFT_DTYPE_BOOL }, { "torch.uint16", GRAFT_DTYPE_UINT16 },
    { "torch.uint32", GRAFT_DTYPE_UINT32 }, { "torch.uint64", GRAFT_DTYPE_UINT64 },
  };
  if (v == NULL || v->kind != GRAFT_PICKLE_GLOBAL)
    return GRAFT_DTYPE_UNDEFINED;
  for (guint k = 0; k < G_N_ELEMENTS (map); k++)
    if (strcmp (map[k].name, v->s) == 0)
      return map[k].dtype;
  return GRAFT_DTYPE_UNDEFINED;
}

/* ('storage', GLOBAL torch.XStorage, key, location, numel[, view_metadata]) */
static GraftPickleValue *
make_storage (Unpickler *u, GraftPickleValue *pid)
{
  if (pid->kind == GRAFT_PICKLE_TUPLE && pid->items->len >= 5 &&
      graft_pickle_value_is_string (g_ptr_array_index (pid->items, 0), "storage"))
    {
      GraftPickleValue *cls = g_ptr_array_index (pid->items, 1);
      GraftPickleValue *key = g_ptr_array_index (pid->items, 2);
      GraftPickleValue *loc = g_ptr_array_index (pid->items, 3);
      GraftPickleValue *numel = g_ptr_array_index (pid->items, 4);
      if (cls->kind != GRAFT_PICKLE_GLOBAL || key->kind != GRAFT_PICKLE_STRING ||
          numel->kind != GRAFT_PICKLE_INT || numel->i < 0)
        {
          fail (u, GRAFT_MODEL_ERROR_MALFORMED, "storage persistent id has unexpected fields");
          return NULL;
        }
      GraftPickleValue *value = value_new (GRAFT_PICKLE_STORAGE);
      value->storage = g_new0 (GraftPickleStorage, 1);
      value->storage->key = g_strdup (key->s);
      value->storage->storage_class = g_strdup (cls->s);
      value->storage->location = g_strdup (loc->kind == GRAFT_PICKLE_STRING ? loc->s : "");
      value->storage->dtype = graft_pickle_storage_class_to_dtype (cls->s);
      value->storage->numel = numel->i;
      return value;
    }
  /* Anything else (legacy ('module', …) ids) stays visible but opaque. */
  GraftPickleValue *value = value_new (GRAFT_PICKLE_OPAQUE);
  value->s = g_strdup ("persistent_id");
  value->state = graft_pickle_value_ref (pid);
  value->depth = pid->depth + 1;
  pid->sealed = TRUE;
  return value;
}

static gboolean
int_list (GraftPickleValue *v, gint64 **out, int *n)
{
  if (v == NULL || (v->kind != GRAFT_PICKLE_TUPLE && v->kind != GRAFT_PICKLE_LIST) || v->items->len > 64)
    return FALSE;
  *n = (int) v->items->len;
  *out = g_new0 (gint64, MAX (*n, 1));
  for (int k = 0; k < *n; k++)
    {
      GraftPickleValue *item = g_ptr_array_index (v->items, k);
      if (item->kind != GRAFT_PICKLE_INT)
        {
          g_clear_pointer (out, g_free);
          return FALSE;
        }
      (*out)[k] = item->i;
    }
  return TRUE;
}

/* _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata])
 * _rebuild_tensor_v3(…, hooks, dtype[, metadata]); _rebuild_tensor(storage, offset, size, stride) */
static GraftPickleValue *
make_tensor (Unpickler *u, GraftPickleValue *args, gboolean v3)
{
  guint n = args->kind == GRAFT_PICKLE_TUPLE ? args->items->len : 0;
  if (n < 4)
    {
      fail (u, GRAFT_MODEL_ERROR_MALFORMED, "tensor rebuild needs at least 4 arguments, got %u", n);
      return NULL;
    }
  GraftPickleValue *storage = g_ptr_array_index (args->items, 0);
  GraftPickleValue *offset = g_ptr_array_index (args->items, 1);
  if (storage->kind != GRAFT_PICKLE_STORAGE || offset->kind != GRAFT_PICKLE_INT || offset->i < 0)
    {
      fail (u, GRAFT_MODEL_ERROR_MALFORMED, "tensor rebuild: first arguments are not (storage, offset)");
      return NULL;
    }
  GraftPickleTensor *t = g_new0 (GraftPickleTensor, 1);
  int nstrides = 0;
  if (!int_list (g_ptr_array_index (args->items, 2), &t->sizes, &t->rank) ||
      !int_list (g_ptr_array_index (args->items, 3), &t->strides, &nstrides) || nstrides != t->rank)
    {
      g_free (t->sizes);
      g_free (t->strides);
      g_free (t);
      fail (u, GRAFT_MODEL_ERROR_MALFORMED, "tensor rebuild: size/stride are not matching int tuples");
      return NULL;
    }
  for (int k = 0; k < t->rank; k++)
    if (t->sizes[k] < 0 || t->strides[k] < 0)
      {
        g_free (t->sizes);
        g_free (t->strides);
        g_free (t);
        fail (u, GRAFT_MODEL_ERROR_MALFORMED, "tensor rebuild: negative size or stride");
        return NULL;
      }
  t->storage = graft_pickle_value_ref (storage);
  t->offset = offset->i;
  t->dtype = storage->storage->dtype;
  if (n > 4)
    {
      GraftPickleValue *rg = g_ptr_array_index (args->items, 4);
      t->requires_grad = rg->kind == GRAFT_PICKLE_BOOL && rg->i;
    }
  if (v3 && n > 6)
    {
      GraftDType dtype = torch_dtype_global (g_ptr_array_index (args->items, 6));
      if (dtype != GRAFT_DTYPE_UNDEFINED)
        t->dtype = dtype;
    }
  GraftPickleValue *value = value_new (GRAFT_PICKLE_TENSOR);
  value->tensor = t;
  return value;
}

static GraftPickleValue *
make_opaque (const char *name, GraftPickleValue *args)
{
  GraftPickleValue *value = value_new (GRAFT_PICKLE_OPAQUE);
  value->s = g_strdup (name);
  value->state = graft_pickle_value_ref (args);
  value->depth = args->depth + 1;
  args->sealed = TRUE;
  return value;
}

/* REDUCE: interpret the globals PyTorch's own loaders understand. */
static GraftPickleValue *
reduce (Unpickler *u, GraftPickleValue *callable, GraftPickleValue *args)
{
  const char *name = callable->kind == GRAFT_PICKLE_GLOBAL ? callable->s : NULL;
  guint n = args->kind == GRAFT_PICKLE_TUPLE ? args->items->len : 0;

  if (args->depth + 1 > GRAFT_PICKLE_MAX_DEPTH)
    {
      fail (u, GRAFT_MODEL_ERROR_UNSAFE, "nesting deeper than %d levels", GRAFT_PICKLE_MAX_DEPTH);
      return NULL;
    }
  if (name == NULL)
    return make_opaque ("<call>", args);
  if (strcmp (name, "torch._utils._rebuild_tensor_v2") == 0 || strcmp (name, "torch._utils._rebuild_tensor") == 0)
    return make_tensor (u, args, FALSE);
  if (strcmp (name, "torch._utils._rebuild_tensor_v3") == 0)
    return make_tensor (u, args, TRUE);
  if ((strcmp (name, "torch._utils._rebuild_parameter") == 0 ||
       strcmp (name, "torch._utils._rebuild_parameter_with_state") == 0) && n >= 1)
    {
      GraftPickleValue *data = g_ptr_array_index (args->items, 0);
      if (data->kind == GRAFT_PICKLE_TENSOR)
        {
          data->tensor->is_parameter = TRUE;
          if (n >= 2)
            {
              GraftPickleValue *rg = g_ptr_array_index (args->items, 1);
              data->tensor->requires_grad = rg->kind == GRAFT_PICKLE_BOOL && rg->i;
            }
        }
      data->sealed = FALSE;
      return graft_pickle_value_ref (data);
    }
  if (strcmp (name, "collections.OrderedDict") == 0 && n == 0)
    return container_new (GRAFT_PICKLE_DICT);
  if ((strcmp (name, "torch.jit._pickle.build_intlist") == 0 ||
       strcmp (name, "torch.jit._pickle.build_doublelist") == 0 ||
       strcmp (name, "torch.jit._pickle.build_boollist") == 0 ||
       strcmp (name, "torch.jit._pickle.build_tensorlist") == 0 ||
       strcmp (name, "torch.jit._pickle.restore_type_tag") == 0) && n >= 1)
    {
      GraftPickleValue *inner = g_ptr_array_index (args->items, 0);
      return graft_pickle_value_ref (inner);
    }
  if ((strcmp (name, "__builtin__.set") == 0 || strcmp (name, "builtins.set") == 0) && n <= 1)
    {
      if (n == 1)
        return graft_pickle_value_ref (g_ptr_array_index (args->items, 0));
      return container_new (GRAFT_PICKLE_LIST);
    }
  return make_opaque (name, args);
}

/* The class of NEWOBJ: a GLOBAL, or in legacy torch.save streams the
 * ('module', GLOBAL, file, source) persistent id. */
static const char *
class_name_of (GraftPickleValue *cls)
{
  if (cls->kind == GRAFT_PICKLE_GLOBAL)
    return cls->s;
  if (cls->kind == GRAFT_PICKLE_OPAQUE && cls->state && cls->state->kind == GRAFT_PICKLE_TUPLE &&
      cls->state->items->len >= 2)
    {
      GraftPickleValue *g = g_ptr_array_index (cls->state->items, 1);
      if (g->kind == GRAFT_PICKLE_GLOBAL)
        return g->s;
    }
  return "<object>";
}

static gboolean
memo_put (Unpickler *u, guint64 index)
{
  GraftPickleValue *v = top (u);
  if (v == NULL)
    return FALSE;
  if (index >= MAX_MEMO || index > (guint64) u->memo->len + 65536)
    return fail (u, GRAFT_MODEL_ERROR_UNSAFE, "memo index %" G_GUINT64_FORMAT " is out of range", index);
  if (index >= u->memo->len)
    g_ptr_array_set_size (u->memo, (guint) index + 1);
  graft_pickle_value_unref (g_ptr_array_index (u->memo, index));
  g_ptr_array_index (u->memo, index) = graft_pickle_value_ref (v);
  return TRUE;
}

static gboolean
memo_get (Unpickler *u, guint64 index)
{
  if (index >= u->memo->len || g_ptr_array_index (u->memo, index) == NULL)
    return fail (u, GRAFT_MODEL_ERROR_MALFORMED, "memo index %" G_GUINT64_FORMAT " was never stored", index);
  push (u, graft_pickle_value_ref (g_ptr_array_index (u->memo, index)));
  return TRUE;
}

static gboolean
push_string (Unpickler *u, GraftPickleKind kind, guint64 n)
{
  if (!need (u, n))
    return FALSE;
  GraftPickleValue *v = value_new (kind);
  v->s = g_strndup ((const char *) u->data + u->pos, (gsize) n);
  v->s_len = (gsize) n;
  if (kind == GRAFT_PICKLE_STRING && !g_utf8_validate (v->s, (gssize) n, NULL))
    {
      graft_pickle_value_unref (v);
      return fail (u, GRAFT_MODEL_ERROR_MALFORMED, "string is not valid UTF-8");
    }
  u->pos += n;
  push (u, v);
  return TRUE;
}

static gboolean
push_long (Unpickler *u, guint64 n)
{
  if (!need (u, n))
    return FALSE;
  GraftPickleValue *v;
  if (n <= 8)
    {
      guint64 raw = n ? take_le (u, (guint) n) : 0;
      if (n > 0 && n < 8 && (raw >> (8 * n - 1)) & 1)
        raw |= ~G_GUINT64_CONSTANT (0) << (8 * n);
      v = value_new (GRAFT_PICKLE_INT);
      v->i = (gint64) raw;
    }
  else
    {
      v = value_new (GRAFT_PICKLE_BIGINT);
      v->s = g_memdup2 (u->data + u->pos, (gsize) n);
      v->s_len = (gsize) n;
      u->pos += n;
    }
  push (u, v);
  return TRUE;
}

static gboolean
do_global (Unpickler *u, const char *module, gsize mlen, const char *name, gsize nlen)
{
  GraftPickleValue *v = value_new (GRAFT_PICKLE_GLOBAL);
  v->s = g_strdup_printf ("%.*s.%.*s", (int) mlen, module, (int) nlen, name);
  push (u, v);
  return TRUE;
}

static gboolean
read_line (Unpickler *u, const char **start, gsize *len)
{
  const guint8 *nl = memchr (u->data + u->pos, '\n', u->len - u->pos);
  if (nl == NULL)
    return fail (u, GRAFT_MODEL_ERROR_TRUNCATED, "GLOBAL name has no end of line");
  *start = (const char *) u->data + u->pos;
  *len = (gsize) (nl - (u->data + u->pos));
  u->pos += *len + 1;
  return TRUE;
}

/* The two values on top, a below b; both popped or neither. */
static gboolean
pop_two (Unpickler *u, GraftPickleValue **a, GraftPickleValue **b)
{
  if ((*b = pop (u)) == NULL)
    return FALSE;
  if ((*a = pop (u)) == NULL)
    {
      graft_pickle_value_unref (*b);
      return FALSE;
    }
  return TRUE;
}

/* The opcodes of pickle protocols 0-5 that torch.save and torch.jit.save
 * write (Python's Lib/pickletools.py names them). */
typedef enum {
  OP_MARK = '(',
  OP_STOP = '.',
  OP_POP = '0',
  OP_POP_MARK = '1',
  OP_DUP = '2',
  OP_BINFLOAT = 'G',
  OP_BININT = 'J',
  OP_BININT1 = 'K',
  OP_BININT2 = 'M',
  OP_NONE = 'N',
  OP_BINPERSID = 'Q',
  OP_REDUCE = 'R',
  OP_BINSTRING = 'T',
  OP_SHORT_BINSTRING = 'U',
  OP_BINUNICODE = 'X',
  OP_BINBYTES = 'B',
  OP_SHORT_BINBYTES = 'C',
  OP_APPEND = 'a',
  OP_BUILD = 'b',
  OP_GLOBAL = 'c',
  OP_DICT = 'd',
  OP_EMPTY_DICT = '}',
  OP_APPENDS = 'e',
  OP_BINGET = 'h',
  OP_LONG_BINGET = 'j',
  OP_LIST = 'l',
  OP_EMPTY_LIST = ']',
  OP_BINPUT = 'q',
  OP_LONG_BINPUT = 'r',
  OP_SETITEM = 's',
  OP_TUPLE = 't',
  OP_EMPTY_TUPLE = ')',
  OP_SETITEMS = 'u',
  OP_PROTO = 0x80,
  OP_NEWOBJ = 0x81,
  OP_TUPLE1 = 0x85,
  OP_TUPLE2 = 0x86,
  OP_TUPLE3 = 0x87,
  OP_NEWTRUE = 0x88,
  OP_NEWFALSE = 0x89,
  OP_LONG1 = 0x8a,
  OP_LONG4 = 0x8b,
  OP_SHORT_BINUNICODE = 0x8c,
  OP_BINUNICODE8 = 0x8d,
  OP_BINBYTES8 = 0x8e,
  OP_EMPTY_SET = 0x8f,
  OP_ADDITEMS = 0x90,
  OP_FROZENSET = 0x91,
  OP_NEWOBJ_EX = 0x92,
  OP_STACK_GLOBAL = 0x93,
  OP_MEMOIZE = 0x94,
  OP_FRAME = 0x95,
} PickleOpcode;

/* An unsigned little-endian operand of width bytes. */
static gboolean
take_operand (Unpickler *u, guint width, guint64 *value)
{
  if (!need (u, width))
    return FALSE;
  *value = take_le (u, width);
  return TRUE;
}

static gboolean
op_binint (Unpickler *u, PickleOpcode op)
{
  guint width = op == OP_BININT ? 4 : op == OP_BININT1 ? 1 : 2;
  guint64 raw;

  if (!take_operand (u, width, &raw))
    return FALSE;
  GraftPickleValue *a = value_new (GRAFT_PICKLE_INT);
  /* BININT is signed; BININT1 and BININT2 are not */
  a->i = op == OP_BININT ? (gint64) (gint32) (guint32) raw : (gint64) raw;
  push (u, a);
  return TRUE;
}

/* BINFLOAT: a big-endian IEEE double. */
static gboolean
op_binfloat (Unpickler *u)
{
  guint64 raw = 0;

  if (!need (u, 8))
    return FALSE;
  for (int k = 0; k < 8; k++)
    raw = (raw << 8) | u->data[u->pos + k];
  u->pos += 8;
  GraftPickleValue *a = value_new (GRAFT_PICKLE_FLOAT);
  memcpy (&a->f, &raw, 8);
  push (u, a);
  return TRUE;
}

/* A string or bytes whose length is a width-byte operand. */
static gboolean
op_counted_string (Unpickler *u, guint width, GraftPickleKind kind)
{
  guint64 length;

  return take_operand (u, width, &length) && push_string (u, kind, length);
}

/* LIST, DICT, FROZENSET: a new container of the items above the mark. */
static gboolean
op_container_from_mark (Unpickler *u, PickleOpcode op)
{
  GPtrArray *items = pop_mark (u);

  if (items == NULL)
    return FALSE;
  GraftPickleValue *a = container_new (op == OP_DICT ? GRAFT_PICKLE_DICT : GRAFT_PICKLE_LIST);
  push (u, a);
  return add_items (u, a, items, op == OP_DICT);
}

static gboolean
op_append (Unpickler *u)
{
  GraftPickleValue *a, *b;

  if ((b = pop (u)) == NULL)
    return FALSE;
  if ((a = top (u)) == NULL || a->kind != GRAFT_PICKLE_LIST)
    {
      graft_pickle_value_unref (b);
      return a == NULL ? FALSE : fail (u, GRAFT_MODEL_ERROR_MALFORMED, "APPEND to something that is not a list");
    }
  return container_add (u, a, b);
}

/* APPENDS, ADDITEMS, SETITEMS: the items above the mark into the list
 * (set) or dict below it. */
static gboolean
op_add_items_from_mark (Unpickler *u, PickleOpcode op)
{
  gboolean to_dict = op == OP_SETITEMS;
  GPtrArray *items = pop_mark (u);
  GraftPickleValue *a;

  if (items == NULL)
    return FALSE;
  if ((a = top (u)) == NULL)
    {
      g_ptr_array_unref (items);
      return FALSE;
    }
  if (a->kind != (to_dict ? GRAFT_PICKLE_DICT : GRAFT_PICKLE_LIST))
    {
      g_ptr_array_unref (items);
      return fail (u, GRAFT_MODEL_ERROR_MALFORMED, "%s on something that is not a %s",
                   to_dict ? "SETITEMS" : "APPENDS", to_dict ? "dict" : "list");
    }
  return add_items (u, a, items, to_dict);
}

static gboolean
op_setitem (Unpickler *u)
{
  GraftPickleValue *value = pop (u);
  GraftPickleValue *key = value ? pop (u) : NULL;
  GraftPickleValue *dict = key ? top (u) : NULL;

  if (dict == NULL || dict->kind != GRAFT_PICKLE_DICT)
    {
      if (key)
        graft_pickle_value_unref (key);
      if (value)
        graft_pickle_value_unref (value);
      return dict == NULL && key != NULL ? FALSE
             : key == NULL ? FALSE : fail (u, GRAFT_MODEL_ERROR_MALFORMED, "SETITEM on something that is not a dict");
    }
  if (!container_add (u, dict, key))
    {
      graft_pickle_value_unref (value);
      return FALSE;
    }
  return container_add (u, dict, value);
}

/* GLOBAL "module\nname\n" */
static gboolean
op_global (Unpickler *u)
{
  /* Set although read_line fills them on success: GCC cannot see that. */
  const char *m = NULL, *n = NULL;
  gsize ml = 0, nl = 0;

  if (!read_line (u, &m, &ml) || !read_line (u, &n, &nl))
    return FALSE;
  return do_global (u, m, ml, n, nl);
}

static gboolean
op_stack_global (Unpickler *u)
{
  GraftPickleValue *a, *b;

  if (!pop_two (u, &a, &b))
    return FALSE;
  gboolean ok = a->kind == GRAFT_PICKLE_STRING && b->kind == GRAFT_PICKLE_STRING;
  if (ok)
    do_global (u, a->s, a->s_len, b->s, b->s_len);
  graft_pickle_value_unref (a);
  graft_pickle_value_unref (b);
  return ok ? TRUE : fail (u, GRAFT_MODEL_ERROR_MALFORMED, "STACK_GLOBAL needs two strings");
}

/* NEWOBJ: an object of class a whose items are the tuple b's. */
static GraftPickleValue *
new_object (Unpickler *u, GraftPickleValue *a, GraftPickleValue *b)
{
  if (b->depth + 1 > GRAFT_PICKLE_MAX_DEPTH)
    return (fail (u, GRAFT_MODEL_ERROR_UNSAFE, "nesting deeper than %d levels", GRAFT_PICKLE_MAX_DEPTH), NULL);
  GraftPickleValue *result = container_new (GRAFT_PICKLE_OBJECT);
  result->s = g_strdup (class_name_of (a));
  if (b->kind == GRAFT_PICKLE_TUPLE)
    for (guint k = 0; k < b->items->len; k++)
      if (!container_add (u, result, graft_pickle_value_ref (g_ptr_array_index (b->items, k))))
        {
          graft_pickle_value_unref (result);
          return NULL;
        }
  return result;
}

/* REDUCE and NEWOBJ: callable or class, then its arguments. */
static gboolean
op_reduce_or_newobj (Unpickler *u, PickleOpcode op)
{
  GraftPickleValue *a, *b, *result;

  if (!pop_two (u, &a, &b))
    return FALSE;
  result = op == OP_REDUCE ? reduce (u, a, b) : new_object (u, a, b);
  graft_pickle_value_unref (a);
  graft_pickle_value_unref (b);
  if (result == NULL)
    return FALSE;
  push (u, result);
  return TRUE;
}

/* NEWOBJ_EX: cls, args, kwargs; only the class matters to the graph. */
static gboolean
op_newobj_ex (Unpickler *u)
{
  GraftPickleValue *a, *b, *kwargs = pop (u);

  if (kwargs == NULL)
    return FALSE;
  graft_pickle_value_unref (kwargs);
  if (!pop_two (u, &a, &b))
    return FALSE;
  GraftPickleValue *result = container_new (GRAFT_PICKLE_OBJECT);
  result->s = g_strdup (class_name_of (a));
  graft_pickle_value_unref (a);
  graft_pickle_value_unref (b);
  push (u, result);
  return TRUE;
}

/* BUILD: the state b of the object a below it. */
static gboolean
op_build (Unpickler *u)
{
  GraftPickleValue *a, *b;

  if ((b = pop (u)) == NULL)
    return FALSE;
  if ((a = top (u)) == NULL)
    {
      graft_pickle_value_unref (b);
      return FALSE;
    }
  if (a->kind != GRAFT_PICKLE_OBJECT)
    {
      /* BUILD on an OrderedDict (state_dict _metadata) or a tensor
       * (Python attributes): nothing the graph needs. */
      graft_pickle_value_unref (b);
      return TRUE;
    }
  if (a->sealed || a->state != NULL || b == a)
    {
      graft_pickle_value_unref (b);
      return fail (u, GRAFT_MODEL_ERROR_UNSUPPORTED, "recursive structure (object state set after it was stored)");
    }
  if (b->depth + 1 > GRAFT_PICKLE_MAX_DEPTH)
    {
      graft_pickle_value_unref (b);
      return fail (u, GRAFT_MODEL_ERROR_UNSAFE, "nesting deeper than %d levels", GRAFT_PICKLE_MAX_DEPTH);
    }
  b->sealed = TRUE;
  a->depth = MAX (a->depth, b->depth + 1);
  a->state = b;
  return TRUE;
}

/* BINPERSID: a persistent id, which torch uses for tensor storages. */
static gboolean
op_binpersid (Unpickler *u)
{
  GraftPickleValue *a, *b;

  if ((a = pop (u)) == NULL)
    return FALSE;
  b = make_storage (u, a);
  graft_pickle_value_unref (a);
  if (b == NULL)
    return FALSE;
  push (u, b);
  return TRUE;
}

/* The stack-only opcodes: MARK, POP, POP_MARK, DUP. */
static gboolean
op_stack (Unpickler *u, PickleOpcode op)
{
  GraftPickleValue *a;
  GPtrArray *items;

  switch (op)
    {
    case OP_MARK:
      if (u->marks->len >= MAX_MARKS)
        return fail (u, GRAFT_MODEL_ERROR_UNSAFE, "more than %d nested MARKs", MAX_MARKS);
      g_array_append_val (u->marks, u->stack->len);
      return TRUE;
    case OP_POP:
      if ((a = pop (u)) == NULL)
        return FALSE;
      graft_pickle_value_unref (a);
      return TRUE;
    case OP_POP_MARK:
      if ((items = pop_mark (u)) == NULL)
        return FALSE;
      g_ptr_array_unref (items);
      return TRUE;
    default: /* OP_DUP */
      if ((a = top (u)) == NULL)
        return FALSE;
      push (u, graft_pickle_value_ref (a));
      return TRUE;
    }
}

/* One opcode. *stop is set at STOP. */
static gboolean
step (Unpickler *u, gboolean *stop)
{
  guint64 operand;

  u->op_pos = u->pos;
  if (!need (u, 1))
    return FALSE;
  PickleOpcode op = u->data[u->pos++];

  switch (op)
    {
    case OP_PROTO:
      if (!need (u, 1))
        return FALSE;
      if (u->data[u->pos] > 5)
        return fail (u, GRAFT_MODEL_ERROR_UNSUPPORTED, "pickle protocol %u", u->data[u->pos]);
      u->pos++;
      return TRUE;
    case OP_FRAME:
      return take_operand (u, 8, &operand);
    case OP_STOP:
      *stop = TRUE;
      return TRUE;
    case OP_MARK: case OP_POP: case OP_POP_MARK: case OP_DUP:
      return op_stack (u, op);
    case OP_NONE:
      push (u, value_new (GRAFT_PICKLE_NONE));
      return TRUE;
    case OP_NEWTRUE: case OP_NEWFALSE:
      {
        GraftPickleValue *a = value_new (GRAFT_PICKLE_BOOL);
        a->i = op == OP_NEWTRUE;
        push (u, a);
        return TRUE;
      }
    case OP_BININT: case OP_BININT1: case OP_BININT2:
      return op_binint (u, op);
    case OP_LONG1:
      return take_operand (u, 1, &operand) && push_long (u, operand);
    case OP_LONG4:
      return take_operand (u, 4, &operand) && push_long (u, operand);
    case OP_BINFLOAT:
      return op_binfloat (u);
    case OP_BINUNICODE:
      return op_counted_string (u, 4, GRAFT_PICKLE_STRING);
    case OP_BINSTRING: case OP_BINBYTES:
      return op_counted_string (u, 4, GRAFT_PICKLE_BYTES);
    case OP_SHORT_BINUNICODE:
      return op_counted_string (u, 1, GRAFT_PICKLE_STRING);
    case OP_SHORT_BINSTRING: case OP_SHORT_BINBYTES:
      return op_counted_string (u, 1, GRAFT_PICKLE_BYTES);
    case OP_BINUNICODE8:
      return op_counted_string (u, 8, GRAFT_PICKLE_STRING);
    case OP_BINBYTES8:
      return op_counted_string (u, 8, GRAFT_PICKLE_BYTES);
    case OP_EMPTY_TUPLE:
      /* One value for all of them: a file of millions of empty tuples
       * then costs a reference each, not two allocations each. */
      if (u->empty_tuple == NULL)
        u->empty_tuple = container_new (GRAFT_PICKLE_TUPLE);
      push (u, graft_pickle_value_ref (u->empty_tuple));
      return TRUE;
    case OP_EMPTY_LIST: case OP_EMPTY_SET:
      push (u, container_new (GRAFT_PICKLE_LIST));
      return TRUE;
    case OP_EMPTY_DICT:
      push (u, container_new (GRAFT_PICKLE_DICT));
      return TRUE;
    case OP_TUPLE:
      {
        GPtrArray *items = pop_mark (u);
        return items != NULL && push_tuple_of (u, items);
      }
    case OP_TUPLE1: case OP_TUPLE2: case OP_TUPLE3:
      return push_tuple_n (u, op - OP_TUPLE1 + 1);
    case OP_LIST: case OP_DICT: case OP_FROZENSET:
      return op_container_from_mark (u, op);
    case OP_APPEND:
      return op_append (u);
    case OP_APPENDS: case OP_ADDITEMS: case OP_SETITEMS:
      return op_add_items_from_mark (u, op);
    case OP_SETITEM:
      return op_setitem (u);
    case OP_GLOBAL:
      return op_global (u);
    case OP_STACK_GLOBAL:
      return op_stack_global (u);
    case OP_REDUCE: case OP_NEWOBJ:
      return op_reduce_or_newobj (u, op);
    case OP_NEWOBJ_EX:
      return op_newobj_ex (u);
    case OP_BUILD:
      return op_build (u);
    case OP_BINPERSID:
      return op_binpersid (u);
    case OP_BINPUT:
      return take_operand (u, 1, &operand) && memo_put (u, operand);
    case OP_LONG_BINPUT:
      return take_operand (u, 4, &operand) && memo_put (u, operand);
    case OP_MEMOIZE:
      return memo_put (u, u->memo->len);
    case OP_BINGET:
      return take_operand (u, 1, &operand) && memo_get (u, operand);
    case OP_LONG_BINGET:
      return take_operand (u, 4, &operand) && memo_get (u, operand);
    default:
      return fail (u, GRAFT_MODEL_ERROR_UNSUPPORTED, "unknown or unsupported pickle opcode");
    }
}

void
graft_pickle_budget_init (GraftPickleBudget *budget, GCancellable *cancellable)
{
  budget->cancellable = cancellable;
  budget->values_left = GRAFT_PICKLE_MAX_VALUES;
}

/* Called between opcodes: the values pushed so far against the budget,
 * and every 64k opcodes, whether the load was cancelled. */
static gboolean
within_budget (Unpickler *u, GraftPickleBudget *budget, guint64 ops)
{
  if (u->pushed > budget->values_left)
    return fail (u, GRAFT_MODEL_ERROR_UNSAFE, "more than %" G_GUINT64_FORMAT " values (the limit for one file)",
                 (guint64) GRAFT_PICKLE_MAX_VALUES);
  if (ops % 65536 == 0 && g_cancellable_is_cancelled (budget->cancellable))
    {
      g_set_error (u->error, GRAFT_MODEL_ERROR, GRAFT_MODEL_ERROR_CANCELLED, "Loading was cancelled");
      return FALSE;
    }
  return TRUE;
}

GraftPickleValue *
graft_pickle_load (const guint8 *data, gsize len, const char *where, gsize *consumed, GError **error)
{
  GraftPickleBudget budget;

  graft_pickle_budget_init (&budget, NULL);
  return graft_pickle_load_budgeted (data, len, where, consumed, &budget, error);
}

GraftPickleValue *
graft_pickle_load_budgeted (const guint8 *data, gsize len, const char *where, gsize *consumed,
                            GraftPickleBudget *budget, GError **error)
{
  Unpickler u = {
    .data = data, .len = len, .where = where, .error = error,
    .stack = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_pickle_value_unref),
    .marks = g_array_new (FALSE, FALSE, sizeof (guint)),
    .memo = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_pickle_value_unref),
  };
  gboolean stop = FALSE;
  GraftPickleValue *result = NULL;

  for (guint64 ops = 1; !stop; ops++)
    if (!within_budget (&u, budget, ops) || !step (&u, &stop))
      goto out;
  if (u.stack->len != 1 || u.marks->len != 0)
    {
      fail (&u, GRAFT_MODEL_ERROR_MALFORMED, "STOP with %u values and %u marks on the stack (expected one value)",
            u.stack->len, u.marks->len);
      goto out;
    }
  result = g_ptr_array_steal_index (u.stack, 0);
  budget->values_left -= MIN (u.pushed, budget->values_left);
  if (consumed)
    *consumed = u.pos;
out:
  /* Values may reference each other through the memo; drop the memo first
   * so freeing never recurses deeper than GRAFT_PICKLE_MAX_DEPTH. */
  g_ptr_array_unref (u.memo);
  g_ptr_array_unref (u.stack);
  g_array_unref (u.marks);
  g_clear_pointer (&u.empty_tuple, graft_pickle_value_unref);
  return result;
}

char *
graft_pickle_peek_first_global (const guint8 *data, gsize len)
{
  gsize limit = MIN (len, 4096);
  for (gsize k = 0; k + 1 < limit; k++)
    {
      if (data[k] == 'c' && (k == 0 || data[k - 1] == 0x02 || data[k - 1] == ')' || data[k - 1] == '('))
        {
          const guint8 *nl1 = memchr (data + k + 1, '\n', limit - k - 1);
          if (nl1 == NULL)
            return NULL;
          const guint8 *nl2 = memchr (nl1 + 1, '\n', limit - (gsize) (nl1 + 1 - data));
          if (nl2 == NULL)
            return NULL;
          return g_strdup_printf ("%.*s.%.*s", (int) (nl1 - data - k - 1), data + k + 1,
                                  (int) (nl2 - nl1 - 1), nl1 + 1);
        }
    }
  return NULL;
}

gboolean
graft_pickle_value_is_string (GraftPickleValue *value, const char *s)
{
  return value && value->kind == GRAFT_PICKLE_STRING && strcmp (value->s, s) == 0;
}

const char *
graft_pickle_value_get_string (GraftPickleValue *value)
{
  return value && value->kind == GRAFT_PICKLE_STRING ? value->s : NULL;
}

GraftPickleValue *
graft_pickle_dict_lookup (GraftPickleValue *dict, const char *key)
{
  if (dict == NULL || dict->kind != GRAFT_PICKLE_DICT)
    return NULL;
  for (guint k = 0; k + 1 < dict->items->len; k += 2)
    if (graft_pickle_value_is_string (g_ptr_array_index (dict->items, k), key))
      return g_ptr_array_index (dict->items, k + 1);
  return NULL;
}

guint
graft_pickle_value_get_length (GraftPickleValue *value)
{
  if (value == NULL || value->items == NULL)
    return 0;
  return value->kind == GRAFT_PICKLE_DICT ? value->items->len / 2 : value->items->len;
}

GraftPickleValue *
graft_pickle_value_get_item (GraftPickleValue *value, guint i)
{
  if (value == NULL || value->items == NULL || i >= value->items->len)
    return NULL;
  return g_ptr_array_index (value->items, i);
}
