#include "runtime/rt-tensor.h"
#include "ir/narrow-dtype.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK (graft-runtime-error-quark, graft_runtime_error)

/* Refuse single tensors above this: a hostile shape must be an error, not an OOM kill. */
#define MAX_TENSOR_BYTES ((gsize) 16 << 30)
#define ALIGNMENT 64

/* Free buffers, the most recently given back last. A request takes the
 * most recent one that fits without wasting more than half of it: a buffer
 * just written is likely still in cache, and one buffer serves layers of
 * different sizes. With exact sizes only, every size kept its own buffers
 * and a network's activations spread over more memory than the caches
 * hold: MobileNetV2's 9.6 MB expand output took 2.9 ms in the network
 * against 1.1 ms on its own. */
typedef struct {
  gpointer buffer;
  gsize capacity;
} PoolBuffer;

struct _GraftRtPool {
  gint ref_count;
  GMutex mutex;
  GArray *free;            /* PoolBuffer */
};

GraftRtPool *
graft_rt_pool_new (void)
{
  GraftRtPool *pool = g_new0 (GraftRtPool, 1);
  pool->ref_count = 1;
  g_mutex_init (&pool->mutex);
  pool->free = g_array_new (FALSE, FALSE, sizeof (PoolBuffer));
  return pool;
}

GraftRtPool *
graft_rt_pool_ref (GraftRtPool *pool)
{
  g_atomic_int_inc (&pool->ref_count);
  return pool;
}

void
graft_rt_pool_unref (GraftRtPool *pool)
{
  if (pool == NULL || !g_atomic_int_dec_and_test (&pool->ref_count))
    return;
  for (guint i = 0; i < pool->free->len; i++)
    free (g_array_index (pool->free, PoolBuffer, i).buffer);
  g_array_unref (pool->free);
  g_mutex_clear (&pool->mutex);
  g_free (pool);
}

static gpointer
aligned_alloc_bytes (gsize nbytes)
{
  void *p = NULL;
  if (posix_memalign (&p, ALIGNMENT, MAX (nbytes, 1)) != 0)
    return NULL;
  return p;
}

static gpointer
pool_take (GraftRtPool *pool, gsize nbytes, gsize *capacity)
{
  gpointer buffer = NULL;

  g_mutex_lock (&pool->mutex);
  for (guint i = pool->free->len; i-- > 0;)
    {
      PoolBuffer *b = &g_array_index (pool->free, PoolBuffer, i);
      if (b->capacity >= nbytes && b->capacity / 2 <= nbytes)
        {
          buffer = b->buffer;
          *capacity = b->capacity;
          g_array_remove_index (pool->free, i);
          break;
        }
    }
  g_mutex_unlock (&pool->mutex);
  return buffer;
}

static void
pool_give (GraftRtPool *pool, gpointer buffer, gsize capacity)
{
  PoolBuffer b = { buffer, capacity };

  g_mutex_lock (&pool->mutex);
  g_array_append_val (pool->free, b);
  g_mutex_unlock (&pool->mutex);
}

gsize
graft_rt_dtype_size (GraftDType dtype)
{
  if (dtype == GRAFT_DTYPE_STRING)
    return sizeof (char *);
  return graft_dtype_get_size (dtype);
}

static gssize live_bytes;

gint64
graft_rt_tensor_get_live_bytes (void)
{
  return (gint64) g_atomic_pointer_get (&live_bytes);
}

static void
count_bytes (GraftRtTensor *t, gsize n)
{
  t->counted += n;
  g_atomic_pointer_add (&live_bytes, (gssize) n);
}

/* What a string element costs on the heap: glibc's malloc puts 8 bytes of
 * header before the text, rounds to 16 and never gives less than 32, so
 * an element of "" costs 32 bytes beside its 8-byte pointer. */
static gsize
string_block_bytes (gsize text_length)
{
  return MAX ((gsize) 32, (text_length + 1 + 8 + 15) & ~(gsize) 15);
}

void
graft_rt_tensor_count_string_bytes (GraftRtTensor *self)
{
  gsize text = 0;

  if (self->kind != GRAFT_RT_TENSOR || self->dtype != GRAFT_DTYPE_STRING || self->data == NULL)
    return;
  for (gint64 i = 0; i < self->numel; i++)
    {
      const char *s = ((char **) self->data)[i];
      text += s ? string_block_bytes (strlen (s)) : 0;
    }
  /* Only what was not counted yet: the pointers and an empty block per
   * element were counted at allocation. */
  if (self->nbytes + text > self->counted)
    count_bytes (self, self->nbytes + text - self->counted);
}

/* The run on this thread's memory limit (graft_rt_tensor_set_thread_limit). */
static GPrivate thread_limit;

void
graft_rt_tensor_set_thread_limit (guint64 bytes)
{
  g_private_set (&thread_limit, GSIZE_TO_POINTER ((gsize) bytes));
}

/* Allocations this small are left to the check between steps: callers
 * make scalars without an error to report. */
#define CHECKED_ALLOCATION_BYTES ((gsize) 1 << 20)

static gboolean
within_thread_limit (GraftDType dtype, gint64 numel, gsize cost, GError **error)
{
  gsize limit = GPOINTER_TO_SIZE (g_private_get (&thread_limit));
  gint64 live = graft_rt_tensor_get_live_bytes ();

  if (limit == 0 || cost <= CHECKED_ALLOCATION_BYTES || (gsize) MAX (live, 0) + cost <= limit)
    return TRUE;
  g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_TOO_LARGE,
               "a %s tensor of %" G_GINT64_FORMAT " elements needs %" G_GSIZE_FORMAT " MiB, past the run's memory "
               "limit of %" G_GSIZE_FORMAT " MiB (%" G_GINT64_FORMAT " MiB held)",
               graft_dtype_to_string (dtype), numel, cost >> 20, limit >> 20, MAX (live, 0) >> 20);
  return FALSE;
}

static gboolean
compute_numel (int rank, const gint64 *dims, GraftDType dtype, gint64 *numel, gsize *nbytes, GError **error)
{
  gint64 n = 1;
  gsize elem = graft_rt_dtype_size (dtype);

  if (rank < 0 || rank > GRAFT_RT_MAX_RANK)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_UNSUPPORTED,
                   "tensor rank %d is outside 0..%d", rank, GRAFT_RT_MAX_RANK);
      return FALSE;
    }
  if (elem == 0)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_UNSUPPORTED,
                   "element type %s is not supported by the runtime", graft_dtype_to_string (dtype));
      return FALSE;
    }
  for (int i = 0; i < rank; i++)
    {
      if (dims[i] < 0)
        {
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                       "negative dimension %" G_GINT64_FORMAT " at axis %d", dims[i], i);
          return FALSE;
        }
      if (dims[i] != 0 && n > (gint64) (MAX_TENSOR_BYTES / elem) / dims[i])
        {
          g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_TOO_LARGE,
                       "a tensor of %s would exceed %" G_GSIZE_FORMAT " GiB",
                       graft_dtype_to_string (dtype), MAX_TENSOR_BYTES >> 30);
          return FALSE;
        }
      n *= dims[i];
    }
  *numel = n;
  *nbytes = (gsize) n * elem;
  return TRUE;
}

static GraftRtTensor *
tensor_alloc (GraftRtPool *pool, GraftDType dtype, int rank, const gint64 *dims, gboolean zero, GError **error)
{
  gint64 numel;
  gsize nbytes;

  if (!compute_numel (rank, dims, dtype, &numel, &nbytes, error))
    return NULL;
  /* A string tensor holds a heap block per element besides its pointers. */
  gsize cost = nbytes + (dtype == GRAFT_DTYPE_STRING ? (gsize) numel * string_block_bytes (0) : 0);
  if (!within_thread_limit (dtype, numel, cost, error))
    return NULL;

  GraftRtTensor *t = g_new0 (GraftRtTensor, 1);
  t->ref_count = 1;
  t->kind = GRAFT_RT_TENSOR;
  t->dtype = dtype;
  t->rank = rank;
  if (rank > 0)
    memcpy (t->dims, dims, sizeof (gint64) * rank);
  t->numel = numel;
  t->nbytes = nbytes;
  if (dtype == GRAFT_DTYPE_STRING)
    zero = TRUE, pool = NULL;
  t->pool = pool ? graft_rt_pool_ref (pool) : NULL;
  t->capacity = nbytes;
  if (pool != NULL)
    t->data = pool_take (pool, nbytes, &t->capacity);
  if (t->data == NULL)
    t->data = aligned_alloc_bytes (nbytes);
  if (t->data == NULL)
    {
      graft_rt_pool_unref (t->pool);
      g_free (t);
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_TOO_LARGE,
                   "out of memory allocating %" G_GSIZE_FORMAT " bytes", nbytes);
      return NULL;
    }
  count_bytes (t, cost);
  if (zero)
    memset (t->data, 0, nbytes);
  if (dtype == GRAFT_DTYPE_STRING)
    for (gint64 i = 0; i < numel; i++)
      ((char **) t->data)[i] = g_strdup ("");
  return t;
}

GraftRtTensor *
graft_rt_tensor_new (GraftDType dtype, int rank, const gint64 *dims, GError **error)
{
  return tensor_alloc (NULL, dtype, rank, dims, TRUE, error);
}

GraftRtTensor *
graft_rt_tensor_new_pooled (GraftRtPool *pool, GraftDType dtype, int rank, const gint64 *dims, GError **error)
{
  return tensor_alloc (pool, dtype, rank, dims, pool == NULL, error);
}

GraftRtTensor *
graft_rt_tensor_new_scalar_i64 (gint64 value)
{
  GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_INT64, 0, NULL, NULL);
  *(gint64 *) t->data = value;
  return t;
}

GraftRtTensor *
graft_rt_tensor_new_scalar_f32 (float value)
{
  GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, 0, NULL, NULL);
  *(float *) t->data = value;
  return t;
}

GraftRtTensor *
graft_rt_tensor_new_sequence (GraftDType elem_dtype)
{
  GraftRtTensor *t = g_new0 (GraftRtTensor, 1);
  t->ref_count = 1;
  t->kind = GRAFT_RT_SEQUENCE;
  t->dtype = elem_dtype;
  t->items = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_rt_tensor_unref);
  return t;
}

GraftRtTensor *
graft_rt_tensor_new_none (GraftDType elem_dtype)
{
  GraftRtTensor *t = g_new0 (GraftRtTensor, 1);
  t->ref_count = 1;
  t->kind = GRAFT_RT_NONE;
  t->dtype = elem_dtype;
  return t;
}

/* A tensor over bytes of the right size: borrowed when aligned. */
static GraftRtTensor *
new_over_bytes (GraftDType dtype, int rank, const gint64 *dims, gint64 numel, GBytes *bytes)
{
  gsize nbytes = g_bytes_get_size (bytes);
  GraftRtTensor *t = g_new0 (GraftRtTensor, 1);
  t->ref_count = 1;
  t->kind = GRAFT_RT_TENSOR;
  t->dtype = dtype;
  t->rank = rank;
  if (t->rank > 0)
    memcpy (t->dims, dims, sizeof (gint64) * t->rank);
  t->numel = numel;
  t->nbytes = nbytes;
  const void *data = g_bytes_get_data (bytes, NULL);
  if (nbytes == 0)
    t->data = aligned_alloc_bytes (1);   /* owned, so that it is freed */
  else if (((guintptr) data) % 16 == 0)
    {
      t->borrowed = g_bytes_ref (bytes);
      t->data = (gpointer) data;
    }
  else
    {
      /* Unaligned slices of the file would make SIMD loads slow or wrong. */
      t->data = aligned_alloc_bytes (nbytes);
      memcpy (t->data, data, nbytes);
    }
  return t;
}

GraftRtTensor *
graft_rt_tensor_new_from_tensor (GraftTensor *tensor, GError **error)
{
  gint64 numel;
  gsize nbytes;

  if (!compute_numel (tensor->rank, tensor->dims, tensor->dtype, &numel, &nbytes, error))
    {
      g_prefix_error (error, "constant '%s': ", tensor->name ? tensor->name : "");
      return NULL;
    }
  if (tensor->dtype == GRAFT_DTYPE_STRING)
    {
      GraftRtTensor *t = graft_rt_tensor_new (GRAFT_DTYPE_STRING, tensor->rank, tensor->dims, error);
      if (t == NULL)
        return NULL;
      for (gint64 i = 0; i < numel && tensor->strings && i < (gint64) tensor->strings->len; i++)
        {
          gsize len;
          const char *s = g_bytes_get_data (tensor->strings->pdata[i], &len);
          g_free (((char **) t->data)[i]);
          ((char **) t->data)[i] = g_strndup (s ? s : "", len);
        }
      return t;
    }

  GBytes *bytes = graft_tensor_get_data (tensor, error);
  if (bytes == NULL)
    return NULL;
  if (g_bytes_get_size (bytes) != nbytes)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                   "constant '%s' holds %" G_GSIZE_FORMAT " bytes, its shape needs %" G_GSIZE_FORMAT,
                   tensor->name ? tensor->name : "", g_bytes_get_size (bytes), nbytes);
      return NULL;
    }
  return new_over_bytes (tensor->dtype, tensor->rank, tensor->dims, numel, bytes);
}

GraftRtTensor *
graft_rt_tensor_new_from_bytes (GraftDType dtype, int rank, const gint64 *dims, GBytes *bytes, GError **error)
{
  gint64 numel;
  gsize nbytes;

  if (dtype == GRAFT_DTYPE_STRING)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID, "string tensors have no flat bytes");
      return NULL;
    }
  if (!compute_numel (rank, dims, dtype, &numel, &nbytes, error))
    return NULL;
  if (g_bytes_get_size (bytes) != nbytes)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                   "%" G_GSIZE_FORMAT " bytes given, the shape needs %" G_GSIZE_FORMAT, g_bytes_get_size (bytes), nbytes);
      return NULL;
    }
  return new_over_bytes (dtype, rank, dims, numel, bytes);
}

GraftTensor *
graft_rt_tensor_to_tensor (const GraftRtTensor *self, const char *name)
{
  GraftTensor *t = graft_tensor_new (name, self->dtype, self->rank, self->dims);
  if (self->dtype == GRAFT_DTYPE_STRING)
    {
      t->strings = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
      for (gint64 i = 0; i < self->numel; i++)
        {
          const char *s = ((char **) self->data)[i];
          g_ptr_array_add (t->strings, g_bytes_new (s, strlen (s)));
        }
      return t;
    }
  g_autoptr(GBytes) bytes = g_bytes_new (self->data, self->nbytes);
  graft_tensor_set_data (t, bytes, NULL);
  return t;
}

GraftRtTensor *
graft_rt_tensor_ref (GraftRtTensor *self)
{
  g_atomic_int_inc (&self->ref_count);
  return self;
}

void
graft_rt_tensor_unref (GraftRtTensor *self)
{
  if (self == NULL || !g_atomic_int_dec_and_test (&self->ref_count))
    return;
  g_atomic_pointer_add (&live_bytes, -(gssize) self->counted);
  if (self->items)
    g_ptr_array_unref (self->items);
  if (self->borrowed)
    g_bytes_unref (self->borrowed);
  else if (self->data)
    {
      if (self->dtype == GRAFT_DTYPE_STRING)
        for (gint64 i = 0; i < self->numel; i++)
          g_free (((char **) self->data)[i]);
      if (self->pool)
        pool_give (self->pool, self->data, self->capacity);
      else
        free (self->data);
    }
  graft_rt_pool_unref (self->pool);
  g_free (self);
}

GraftRtTensor *
graft_rt_tensor_copy (const GraftRtTensor *self, GError **error)
{
  if (self->kind == GRAFT_RT_SEQUENCE)
    {
      GraftRtTensor *seq = graft_rt_tensor_new_sequence (self->dtype);
      for (guint i = 0; i < self->items->len; i++)
        g_ptr_array_add (seq->items, graft_rt_tensor_ref (self->items->pdata[i]));
      return seq;
    }
  if (self->kind == GRAFT_RT_NONE)
    return graft_rt_tensor_new_none (self->dtype);

  GraftRtTensor *t = tensor_alloc (NULL, self->dtype, self->rank, self->dims, FALSE, error);
  if (t == NULL)
    return NULL;
  if (self->dtype == GRAFT_DTYPE_STRING)
    for (gint64 i = 0; i < self->numel; i++)
      {
        g_free (((char **) t->data)[i]);
        ((char **) t->data)[i] = g_strdup (((char **) self->data)[i]);
      }
  else
    memcpy (t->data, self->data, self->nbytes);
  return t;
}

GraftRtTensor *
graft_rt_tensor_reshape (GraftRtTensor *self, int rank, const gint64 *dims, GError **error)
{
  gint64 numel;
  gsize nbytes;

  if (!compute_numel (rank, dims, self->dtype, &numel, &nbytes, error))
    return NULL;
  if (numel != self->numel)
    {
      g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                   "cannot reshape %" G_GINT64_FORMAT " elements into %" G_GINT64_FORMAT,
                   self->numel, numel);
      return NULL;
    }
  if (self->dtype == GRAFT_DTYPE_STRING)
    {
      GraftRtTensor *t = graft_rt_tensor_copy (self, error);
      if (t == NULL)
        return NULL;
      t->rank = rank;
      memcpy (t->dims, dims, sizeof (gint64) * rank);
      return t;
    }

  /* A view: the new tensor keeps self's buffer alive through a GBytes. */
  GraftRtTensor *t = g_new0 (GraftRtTensor, 1);
  t->ref_count = 1;
  t->kind = GRAFT_RT_TENSOR;
  t->dtype = self->dtype;
  t->rank = rank;
  if (rank > 0)
    memcpy (t->dims, dims, sizeof (gint64) * rank);
  t->numel = numel;
  t->nbytes = nbytes;
  t->data = self->data;
  t->borrowed = g_bytes_new_with_free_func (self->data, self->nbytes,
                                            (GDestroyNotify) graft_rt_tensor_unref,
                                            graft_rt_tensor_ref (self));
  return t;
}

gboolean
graft_rt_tensor_is_writable (const GraftRtTensor *self)
{
  return self->borrowed == NULL;
}

void
graft_rt_tensor_get_shape (const GraftRtTensor *self, GraftShape *shape)
{
  graft_shape_init_fixed (shape, self->rank, self->dims);
}

gboolean
graft_rt_tensor_same_shape (const GraftRtTensor *a, const GraftRtTensor *b)
{
  return a->rank == b->rank && memcmp (a->dims, b->dims, sizeof (gint64) * a->rank) == 0;
}

char *
graft_rt_tensor_describe (const GraftRtTensor *self)
{
  if (self->kind == GRAFT_RT_SEQUENCE)
    return g_strdup_printf ("sequence of %u %s tensors", self->items->len, graft_dtype_to_string (self->dtype));
  if (self->kind == GRAFT_RT_NONE)
    return g_strdup ("none");

  GString *s = g_string_new (graft_dtype_to_string (self->dtype));
  g_string_append_c (s, '[');
  for (int i = 0; i < self->rank; i++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i ? "," : "", self->dims[i]);
  g_string_append_c (s, ']');
  return g_string_free (s, FALSE);
}

/* IEEE 754 binary16 ↔ binary32, round to nearest even. */
float
graft_half_to_float (guint16 h)
{
  guint32 sign = (guint32) (h & 0x8000) << 16;
  guint32 exp = (h >> 10) & 0x1f;
  guint32 mant = h & 0x3ff;
  guint32 bits;

  if (exp == 0)
    {
      if (mant == 0)
        bits = sign;
      else
        {
          /* subnormal: normalise */
          exp = 127 - 15 + 1;
          while ((mant & 0x400) == 0)
            {
              mant <<= 1;
              exp--;
            }
          mant &= 0x3ff;
          bits = sign | (exp << 23) | (mant << 13);
        }
    }
  else if (exp == 0x1f)
    bits = sign | 0x7f800000 | (mant << 13);
  else
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);

  float f;
  memcpy (&f, &bits, 4);
  return f;
}

guint16
graft_float_to_half (float f)
{
  guint32 x;
  memcpy (&x, &f, 4);
  guint32 sign = (x >> 16) & 0x8000;
  guint32 exp = (x >> 23) & 0xff;
  guint32 mant = x & 0x7fffff;

  if (exp == 0xff)
    return sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0);
  gint32 e = (gint32) exp - 127 + 15;
  if (e >= 0x1f)
    return sign | 0x7c00;
  if (e <= 0)
    {
      if (e < -10)
        return sign;
      mant |= 0x800000;
      guint32 shift = 14 - e;
      guint32 half_mant = mant >> shift;
      guint32 rem = mant & ((1u << shift) - 1);
      guint32 halfway = 1u << (shift - 1);
      if (rem > halfway || (rem == halfway && (half_mant & 1)))
        half_mant++;
      return sign | half_mant;
    }
  guint32 half = sign | ((guint32) e << 10) | (mant >> 13);
  guint32 rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
    half++;
  return half;
}

float
graft_bfloat16_to_float (guint16 b)
{
  guint32 bits = (guint32) b << 16;
  float f;
  memcpy (&f, &bits, 4);
  return f;
}

guint16
graft_float_to_bfloat16 (float f)
{
  guint32 x;
  memcpy (&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000)
    return (x >> 16) | 0x40;
  x += 0x7fff + ((x >> 16) & 1);
  return x >> 16;
}

double
graft_rt_tensor_get_f64 (const GraftRtTensor *self, gint64 i)
{
  const void *d = self->data;
  switch (self->dtype)
    {
    case GRAFT_DTYPE_FLOAT32: return ((const float *) d)[i];
    case GRAFT_DTYPE_FLOAT64: return ((const double *) d)[i];
    case GRAFT_DTYPE_FLOAT16: return graft_half_to_float (((const guint16 *) d)[i]);
    case GRAFT_DTYPE_BFLOAT16: return graft_bfloat16_to_float (((const guint16 *) d)[i]);
    case GRAFT_DTYPE_INT8: return ((const gint8 *) d)[i];
    case GRAFT_DTYPE_UINT8: return ((const guint8 *) d)[i];
    case GRAFT_DTYPE_BOOL: return ((const guint8 *) d)[i] != 0;
    case GRAFT_DTYPE_INT16: return ((const gint16 *) d)[i];
    case GRAFT_DTYPE_UINT16: return ((const guint16 *) d)[i];
    case GRAFT_DTYPE_INT32: return ((const gint32 *) d)[i];
    case GRAFT_DTYPE_UINT32: return ((const guint32 *) d)[i];
    case GRAFT_DTYPE_INT64: return (double) ((const gint64 *) d)[i];
    case GRAFT_DTYPE_UINT64: return (double) ((const guint64 *) d)[i];
    default:
      if (graft_narrow_dtype_is_narrow (self->dtype))
        return graft_narrow_dtype_decode (self->dtype, ((const guint8 *) d)[i]);
      return NAN;
    }
}

static gint64
saturate_double_to_i64 (double v)
{
  if (isnan (v))
    return 0;
  if (v >= 9.2233720368547758e18)
    return G_MAXINT64;
  if (v <= -9.2233720368547758e18)
    return G_MININT64;
  return (gint64) v;
}

void
graft_rt_tensor_set_f64 (GraftRtTensor *self, gint64 i, double v)
{
  void *d = self->data;
  switch (self->dtype)
    {
    case GRAFT_DTYPE_FLOAT32: ((float *) d)[i] = (float) v; break;
    case GRAFT_DTYPE_FLOAT64: ((double *) d)[i] = v; break;
    case GRAFT_DTYPE_FLOAT16: ((guint16 *) d)[i] = graft_float_to_half ((float) v); break;
    case GRAFT_DTYPE_BFLOAT16: ((guint16 *) d)[i] = graft_float_to_bfloat16 ((float) v); break;
    case GRAFT_DTYPE_BOOL: ((guint8 *) d)[i] = v != 0; break;
    case GRAFT_DTYPE_UINT64:
      ((guint64 *) d)[i] = v >= 1.8446744073709552e19 ? G_MAXUINT64 : v < 0 ? (guint64) saturate_double_to_i64 (v) : (guint64) v;
      break;
    default:
      if (graft_narrow_dtype_is_narrow (self->dtype))
        {
          ((guint8 *) d)[i] = graft_narrow_dtype_encode (self->dtype, v, TRUE);
          break;
        }
      /* integers; a dtype neither function stores (undefined, string,
       * complex) is left alone rather than bounced between the two */
      if (graft_dtype_is_integer (self->dtype))
        graft_rt_tensor_set_i64 (self, i, saturate_double_to_i64 (v));
      break;
    }
}

gint64
graft_rt_tensor_get_i64 (const GraftRtTensor *self, gint64 i)
{
  const void *d = self->data;
  switch (self->dtype)
    {
    case GRAFT_DTYPE_INT8: return ((const gint8 *) d)[i];
    case GRAFT_DTYPE_UINT8: return ((const guint8 *) d)[i];
    case GRAFT_DTYPE_BOOL: return ((const guint8 *) d)[i] != 0;
    case GRAFT_DTYPE_INT16: return ((const gint16 *) d)[i];
    case GRAFT_DTYPE_UINT16: return ((const guint16 *) d)[i];
    case GRAFT_DTYPE_INT32: return ((const gint32 *) d)[i];
    case GRAFT_DTYPE_UINT32: return ((const guint32 *) d)[i];
    case GRAFT_DTYPE_INT64: return ((const gint64 *) d)[i];
    case GRAFT_DTYPE_UINT64: return (gint64) ((const guint64 *) d)[i];
    default: return saturate_double_to_i64 (graft_rt_tensor_get_f64 (self, i));
    }
}

void
graft_rt_tensor_set_i64 (GraftRtTensor *self, gint64 i, gint64 v)
{
  void *d = self->data;
  /* Integer targets wrap (two's complement), as numpy's astype does. */
  switch (self->dtype)
    {
    case GRAFT_DTYPE_INT8: ((gint8 *) d)[i] = (gint8) (guint8) v; break;
    case GRAFT_DTYPE_UINT8: ((guint8 *) d)[i] = (guint8) v; break;
    case GRAFT_DTYPE_BOOL: ((guint8 *) d)[i] = v != 0; break;
    case GRAFT_DTYPE_INT16: ((gint16 *) d)[i] = (gint16) (guint16) v; break;
    case GRAFT_DTYPE_UINT16: ((guint16 *) d)[i] = (guint16) v; break;
    case GRAFT_DTYPE_INT32: ((gint32 *) d)[i] = (gint32) (guint32) v; break;
    case GRAFT_DTYPE_UINT32: ((guint32 *) d)[i] = (guint32) v; break;
    case GRAFT_DTYPE_INT64: ((gint64 *) d)[i] = v; break;
    case GRAFT_DTYPE_UINT64: ((guint64 *) d)[i] = (guint64) v; break;
    default: graft_rt_tensor_set_f64 (self, i, (double) v); break;
    }
}

GraftRtTensor *
graft_rt_tensor_to_float32 (const GraftRtTensor *self, GError **error)
{
  return graft_rt_tensor_cast (self, GRAFT_DTYPE_FLOAT32, error);
}

static gboolean
parse_string_number (const char *s, double *out)
{
  char *end = NULL;
  g_autofree char *lower = g_ascii_strdown (s, -1);
  g_strstrip (lower);
  if (g_str_equal (lower, "nan") || g_str_equal (lower, "-nan"))
    return *out = NAN, TRUE;
  if (g_str_equal (lower, "inf") || g_str_equal (lower, "+inf") || g_str_equal (lower, "infinity"))
    return *out = INFINITY, TRUE;
  if (g_str_equal (lower, "-inf") || g_str_equal (lower, "-infinity"))
    return *out = -INFINITY, TRUE;
  *out = g_ascii_strtod (lower, &end);
  return end != lower;
}

static char *
format_number_string (const GraftRtTensor *self, gint64 i)
{
  if (graft_dtype_is_float (self->dtype))
    {
      double v = graft_rt_tensor_get_f64 (self, i);
      if (isnan (v))
        return g_strdup ("NaN");
      if (isinf (v))
        return g_strdup (v > 0 ? "INF" : "-INF");
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      /* numpy's str(float32) uses the shortest repr */
      if (self->dtype == GRAFT_DTYPE_FLOAT32)
        {
          for (int prec = 1; prec <= 9; prec++)
            {
              char format[8];
              g_snprintf (format, sizeof format, "%%.%dg", prec);
              g_ascii_formatd (buf, sizeof buf, format, v);
              if ((float) g_ascii_strtod (buf, NULL) == (float) v)
                break;
            }
          return g_strdup (buf);
        }
      return g_strdup (g_ascii_dtostr (buf, sizeof buf, v));
    }
  if (self->dtype == GRAFT_DTYPE_UINT64)
    return g_strdup_printf ("%" G_GUINT64_FORMAT, ((guint64 *) self->data)[i]);
  if (self->dtype == GRAFT_DTYPE_BOOL)
    return g_strdup (((guint8 *) self->data)[i] ? "True" : "False");
  return g_strdup_printf ("%" G_GINT64_FORMAT, graft_rt_tensor_get_i64 (self, i));
}

GraftRtTensor *
graft_rt_tensor_cast (const GraftRtTensor *self, GraftDType dtype, GError **error)
{
  GraftRtTensor *out = graft_rt_tensor_new (dtype, self->rank, self->dims, error);
  if (out == NULL)
    return NULL;

  if (self->dtype == dtype)
    {
      g_autoptr(GraftRtTensor) copy = graft_rt_tensor_copy (self, error);
      graft_rt_tensor_unref (out);
      return copy ? graft_rt_tensor_ref (copy) : NULL;
    }
  if (self->dtype == GRAFT_DTYPE_STRING)
    {
      for (gint64 i = 0; i < self->numel; i++)
        {
          double v;
          const char *s = ((char **) self->data)[i];
          if (!parse_string_number (s, &v))
            {
              g_set_error (error, GRAFT_RUNTIME_ERROR, GRAFT_RUNTIME_ERROR_INVALID,
                           "cannot convert the string \"%s\" to %s", s, graft_dtype_to_string (dtype));
              graft_rt_tensor_unref (out);
              return NULL;
            }
          if (graft_dtype_is_integer (dtype) && fabs (v) < 9e15)
            graft_rt_tensor_set_i64 (out, i, g_ascii_strtoll (s, NULL, 10));
          else
            graft_rt_tensor_set_f64 (out, i, v);
        }
      return out;
    }
  if (dtype == GRAFT_DTYPE_STRING)
    {
      for (gint64 i = 0; i < self->numel; i++)
        {
          g_free (((char **) out->data)[i]);
          ((char **) out->data)[i] = format_number_string (self, i);
        }
      return out;
    }

  if (self->dtype == GRAFT_DTYPE_FLOAT32 && dtype == GRAFT_DTYPE_FLOAT16)
    {
      const float *s = self->data;
      guint16 *d = out->data;
      for (gint64 i = 0; i < self->numel; i++)
        d[i] = graft_float_to_half (s[i]);
      return out;
    }
  if (self->dtype == GRAFT_DTYPE_FLOAT16 && dtype == GRAFT_DTYPE_FLOAT32)
    {
      const guint16 *s = self->data;
      float *d = out->data;
      for (gint64 i = 0; i < self->numel; i++)
        d[i] = graft_half_to_float (s[i]);
      return out;
    }
  if (self->dtype == GRAFT_DTYPE_INT32 && dtype == GRAFT_DTYPE_FLOAT32)
    {
      /* ConvInteger's sums on their way to float in quantize_dynamic's
       * models: one rounding, as through double below. */
      const gint32 *s = self->data;
      float *d = out->data;
      for (gint64 i = 0; i < self->numel; i++)
        d[i] = (float) s[i];
      return out;
    }

  gboolean src_int = graft_dtype_is_integer (self->dtype) || self->dtype == GRAFT_DTYPE_BOOL;
  gboolean dst_float = graft_dtype_is_float (dtype);
  for (gint64 i = 0; i < self->numel; i++)
    {
      if (src_int && !dst_float)
        graft_rt_tensor_set_i64 (out, i, graft_rt_tensor_get_i64 (self, i));
      else if (self->dtype == GRAFT_DTYPE_UINT64 && dst_float)
        graft_rt_tensor_set_f64 (out, i, (double) ((guint64 *) self->data)[i]);
      else if (src_int)
        graft_rt_tensor_set_f64 (out, i, (double) graft_rt_tensor_get_i64 (self, i));
      else if (dtype == GRAFT_DTYPE_FLOAT16 && self->dtype == GRAFT_DTYPE_FLOAT64)
        ((guint16 *) out->data)[i] = graft_float_to_half ((float) ((double *) self->data)[i]);
      else
        graft_rt_tensor_set_f64 (out, i, graft_rt_tensor_get_f64 (self, i));
    }
  return out;
}
