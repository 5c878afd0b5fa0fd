/* sluice.h: the whole public API of libsluice. */
#ifndef SLUICE_H
#define SLUICE_H

#include "sluice/status.h"
#include "sluice/version.h"
#include "sluice/tensor.h"
#include "sluice/op.h"
#include "sluice/dataset.h"
#include "sluice/iterator.h"
#include "sluice/graph.h"
#include "sluice/network.h"
#include "sluice/step.h"
#include "sluice/checkpoint.h"
#include "sluice/budget.h"
#include "sluice/model.h"

#endif
