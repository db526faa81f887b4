#include "torchscript/pickle.h"

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

static gboolean
step (Unpickler *u, gboolean *stop)
{
  u->op_pos = u->pos;
  if (!need (u, 1))
    return FALSE;
  guint8 op = u->data[u->pos++];
  GraftPickleValue *a, *b;

  switch (op)
    {
    case 0x80: /* PROTO */
      if (!need (u, 1))
        return FALSE;
      if (u->data[u->pos] > 5)
        return fail (u, GRAFT_MODEL_ERROR_UNSUPPORTED, "pickle protocol %u", u->data[u->pos]);
      u->pos++;
      return TRUE;
    case 0x95: /* FRAME */
      if (!need (u, 8))
        return FALSE;
      u->pos += 8;
      return TRUE;
    case '.': /* STOP */
      *stop = TRUE;
      return TRUE;
    case '(': /* MARK */
      if (u->marks->len >= MAX_MARKS)
        return fail (u, GRAFT_MODEL_ERROR_UNSAFE, "more than %d nested MARKs", MAX_MARKS);
      g_array_append_val (u->marks, u->stack->len);
      return TRUE;
    case '0': /* POP */
      if ((a = pop (u)) == NULL)
        return FALSE;
      graft_pickle_value_unref (a);
      return TRUE;
    case '1': /* POP_MARK */
      {
        GPtrArray *items = pop_mark (u);
        if (items == NULL)
          return FALSE;
        g_ptr_array_unref (items);
        return TRUE;
      }
    case '2': /* DUP */
      if ((a = top (u)) == NULL)
        return FALSE;
      push (u, graft_pickle_value_ref (a));
      return TRUE;
    case 'N':
      push (u, value_new (GRAFT_PICKLE_NONE));
      return TRUE;
    case 0x88: case 0x89:
      a = value_new (GRAFT_PICKLE_BOOL);
      a->i = op == 0x88;
      push (u, a);
      return TRUE;
    case 'J': case 'K': case 'M':
      {
        guint width = op == 'J' ? 4 : op == 'K' ? 1 : 2;
        if (!need (u, width))
          return FALSE;
        guint64 raw = take_le (u, width);
        a = value_new (GRAFT_PICKLE_INT);
        a->i = op == 'J' ? (gint64) (gint32) (guint32) raw : (gint64) raw;
        push (u, a);
        return TRUE;
      }
    case 0x8a: /* LONG1 */
      if (!need (u, 1))
        return FALSE;
      return push_long (u, take_le (u, 1));
    case 0x8b: /* LONG4 */
      if (!need (u, 4))
        return FALSE;
      return push_long (u, take_le (u, 4));
    case 'G': /* BINFLOAT, big-endian */
      {
        if (!need (u, 8))
          return FALSE;
        guint64 raw = 0;
        for (int k = 0; k < 8; k++)
          raw = (raw << 8) | u->data[u->pos + k];
        u->pos += 8;
        a = value_new (GRAFT_PICKLE_FLOAT);
        memcpy (&a->f, &raw, 8);
        push (u, a);
        return TRUE;
      }
    case 'X': case 'T': case 'B': /* BINUNICODE, BINSTRING, BINBYTES: u32 length */
      if (!need (u, 4))
        return FALSE;
      return push_string (u, op == 'X' ? GRAFT_PICKLE_STRING : GRAFT_PICKLE_BYTES, take_le (u, 4));
    case 0x8c: case 'U': case 'C': /* SHORT_BINUNICODE, SHORT_BINSTRING, SHORT_BINBYTES */
      if (!need (u, 1))
        return FALSE;
      return push_string (u, op == 0x8c ? GRAFT_PICKLE_STRING : GRAFT_PICKLE_BYTES, take_le (u, 1));
    case 0x8d: case 0x8e: /* BINUNICODE8, BINBYTES8 */
      if (!need (u, 8))
        return FALSE;
      return push_string (u, op == 0x8d ? GRAFT_PICKLE_STRING : GRAFT_PICKLE_BYTES, take_le (u, 8));
    case ')':
      push (u, container_new (GRAFT_PICKLE_TUPLE));
      return TRUE;
    case ']':
      push (u, container_new (GRAFT_PICKLE_LIST));
      return TRUE;
    case '}':
      push (u, container_new (GRAFT_PICKLE_DICT));
      return TRUE;
    case 0x8f: /* EMPTY_SET */
      push (u, container_new (GRAFT_PICKLE_LIST));
      return TRUE;
    case 't': /* TUPLE */
      {
        GPtrArray *items = pop_mark (u);
        return items != NULL && push_tuple_of (u, items);
      }
    case 0x85: case 0x86: case 0x87:
      return push_tuple_n (u, op - 0x84);
    case 'l': case 'd': case 0x91: /* LIST, DICT, FROZENSET */
      {
        GPtrArray *items = pop_mark (u);
        if (items == NULL)
          return FALSE;
        a = container_new (op == 'd' ? GRAFT_PICKLE_DICT : GRAFT_PICKLE_LIST);
        push (u, a);
        return add_items (u, a, items, op == 'd');
      }
    case 'a': /* APPEND */
      if ((b = pop (u)) == NULL)
        return FALSE;
      if ((a = top (u)) == NULL || a->kind != GRAFT_PICKLE_LIST)
        {
          graft_pickle_value_unref (b);
          return a == NULL ? FALSE : fail (u, GRAFT_MODEL_ERROR_MALFORMED, "APPEND to something that is not a list");
        }
      return container_add (u, a, b);
    case 'e': case 0x90: /* APPENDS, ADDITEMS */
    case 'u': /* SETITEMS */
      {
        GPtrArray *items = pop_mark (u);
        if (items == NULL)
          return FALSE;
        if ((a = top (u)) == NULL)
          {
            g_ptr_array_unref (items);
            return FALSE;
          }
        GraftPickleKind want = op == 'u' ? GRAFT_PICKLE_DICT : GRAFT_PICKLE_LIST;
        if (a->kind != want)
          {
            g_ptr_array_unref (items);
            return fail (u, GRAFT_MODEL_ERROR_MALFORMED, "%s on something that is not a %s",
                         op == 'u' ? "SETITEMS" : "APPENDS", op == 'u' ? "dict" : "list");
          }
        return add_items (u, a, items, op == 'u');
      }
    case 's': /* SETITEM */
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
    case 'c': /* GLOBAL "module\nname\n" */
      {
        const char *m, *n;
        gsize ml, nl;
        if (!read_line (u, &m, &ml) || !read_line (u, &n, &nl))
          return FALSE;
        return do_global (u, m, ml, n, nl);
      }
    case 0x93: /* STACK_GLOBAL */
      {
        if ((b = pop (u)) == NULL)
          return FALSE;
        if ((a = pop (u)) == NULL)
          {
            graft_pickle_value_unref (b);
            return FALSE;
          }
        gboolean ok = a->kind == GRAFT_PICKLE_STRING && b->kind == GRAFT_PICKLE_STRING;
        if (ok)
          do_global (u, a->s, a->s_len, b->s, b->s_len);
        graft_pickle_value_unref (a);
        graft_pickle_value_unref (b);
        return ok ? TRUE : fail (u, GRAFT_MODEL_ERROR_MALFORMED, "STACK_GLOBAL needs two strings");
      }
    case 'R': /* REDUCE */
    case 0x81: /* NEWOBJ */
      {
        if ((b = pop (u)) == NULL)
          return FALSE;
        if ((a = pop (u)) == NULL)
          {
            graft_pickle_value_unref (b);
            return FALSE;
          }
        GraftPickleValue *result;
        if (op == 'R')
          result = reduce (u, a, b);
        else if (b->depth + 1 > GRAFT_PICKLE_MAX_DEPTH)
          result = (fail (u, GRAFT_MODEL_ERROR_UNSAFE, "nesting deeper than %d levels", GRAFT_PICKLE_MAX_DEPTH), NULL);
        else
          {
            result = container_new (GRAFT_PICKLE_OBJECT);
            result->s = g_strdup (class_name_of (a));
            if (b->kind == GRAFT_PICKLE_TUPLE)
              for (guint k = 0; k < b->items->len; k++)
                if (!container_add (u, result, graft_pickle_value_ref (g_ptr_array_index (b->items, k))))
                  {
                    graft_pickle_value_unref (result);
                    result = NULL;
                    break;
                  }
          }
        graft_pickle_value_unref (a);
        graft_pickle_value_unref (b);
        if (result == NULL)
          return FALSE;
        push (u, result);
        return TRUE;
      }
    case 0x92: /* NEWOBJ_EX: cls, args, kwargs */
      {
        GraftPickleValue *kwargs = pop (u);
        if (kwargs == NULL)
          return FALSE;
        graft_pickle_value_unref (kwargs);
        if ((b = pop (u)) == NULL)
          return FALSE;
        if ((a = pop (u)) == NULL)
          {
            graft_pickle_value_unref (b);
            return FALSE;
          }
        GraftPickleValue *result = container_new (GRAFT_PICKLE_OBJECT);
        result->s = g_strdup (class_name_of (a));
        graft_pickle_value_unref (a);
        graft_pickle_value_unref (b);
        push (u, result);
        return TRUE;
      }
    case 'b': /* BUILD */
      {
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
    case 'Q': /* BINPERSID */
      {
        if ((a = pop (u)) == NULL)
          return FALSE;
        b = make_storage (u, a);
        graft_pickle_value_unref (a);
        if (b == NULL)
          return FALSE;
        push (u, b);
        return TRUE;
      }
    case 'q':
      if (!need (u, 1))
        return FALSE;
      return memo_put (u, take_le (u, 1));
    case 'r':
      if (!need (u, 4))
        return FALSE;
      return memo_put (u, take_le (u, 4));
    case 0x94: /* MEMOIZE */
      return memo_put (u, u->memo->len);
    case 'h':
      if (!need (u, 1))
        return FALSE;
      return memo_get (u, take_le (u, 1));
    case 'j':
      if (!need (u, 4))
        return FALSE;
      return memo_get (u, take_le (u, 4));
    default:
      return fail (u, GRAFT_MODEL_ERROR_UNSUPPORTED, "unknown or unsupported pickle opcode");
    }
}

GraftPickleValue *
graft_pickle_load (const guint8 *data, gsize len, const char *where, gsize *consumed, GError **error)
{
  Unpickler u = {
    .data = data, .len = len, .where = where, .error = error,
    .stack = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_pickle_value_unref),
    .marks = g_array_new (FALSE, FALSE, sizeof (guint)),
    .memo = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_pickle_value_unref),
  };
  gboolean stop = FALSE;
  GraftPickleValue *result = NULL;

  while (!stop)
    if (!step (&u, &stop))
      goto out;
  if (u.stack->len != 1 || u.marks->len != 0)
    {
      fail (&u, GRAFT_MODEL_ERROR_MALFORMED, "STOP with %u values and %u marks on the stack (expected one value)",
            u.stack->len, u.marks->len);
      goto out;
    }
  result = g_ptr_array_steal_index (u.stack, 0);
  if (consumed)
    *consumed = u.pos;
out:
  /* Values may reference each other through the memo; drop the memo first
   * so freeing never recurses deeper than GRAFT_PICKLE_MAX_DEPTH. */
  g_ptr_array_unref (u.memo);
  g_ptr_array_unref (u.stack);
  g_array_unref (u.marks);
  return result;
}

gboolean
graft_pickle_get_protocol (const guint8 *data, gsize len, int *protocol)
{
  if (len < 2 || data[0] != 0x80)
    return FALSE;
  *protocol = data[1];
  return TRUE;
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
