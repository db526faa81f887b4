/* Which GSK renderer Graft's windows draw with.
 *
 * GTK 4 draws with OpenGL when it can, even when the only OpenGL is Mesa's
 * software rasterizer (llvmpipe under Xvfb, in containers, over ssh -X and
 * on machines without a GPU driver). There, each frame of the canvas costs
 * 70-110 ms of CPU in llvmpipe's threads for any model, tiny or big (perf
 * on a wheel scroll: 86 % in llvmpipe, 8 % in Graft's cairo drawing), while
 * GTK's cairo renderer draws the same frame in under 10 ms. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* The OpenGL renderer string of display ("llvmpipe (LLVM 15.0.6, 256
 * bits)"), or NULL when it has no OpenGL. */
char *graft_renderer_dup_gl_name (GdkDisplay *display);

/* TRUE if gl_name names a software rasterizer. */
gboolean graft_renderer_gl_is_software (const char *gl_name);

/* Sets GSK_RENDERER=cairo when OpenGL is software only and the user has
 * not chosen a renderer. Call before the first window is realized (GTK
 * reads GSK_RENDERER once) and while no other thread reads the
 * environment. Returns the renderer name it chose, or NULL if it left the
 * choice to GTK. */
const char *graft_renderer_choose (GdkDisplay *display);

G_END_DECLS
