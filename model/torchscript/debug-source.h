/* Where the nodes of a TorchScript archive came from in the user's Python:
 * each code/<file>.py.debug_pkl maps byte offsets of the serialised code to
 * ranges of the original source (file name, line), as
 * ('FORMAT_WITH_STRING_TABLE', strings, ((offset, ((text_parts, file,
 * first_line), start, end), tag), …)). Graft reads it with its data-only
 * unpickler; an archive without one (torch.jit.save drops them on request)
 * or with a damaged one simply has no locations. */
#pragma once

#include "ir/graph.h"
#include "pytorch/torch-archive.h"

G_BEGIN_DECLS

/* Sets node->python_source ("torch/nn/modules/conv.py:459") on the nodes of
 * graph and its subgraphs whose source_range ("code/….py:LINE") the
 * archive's debug records map. */
void graft_debug_source_annotate (GraftTorchArchive *archive, GraftGraph *graph);

G_END_DECLS
