/*
 * json.h - strict JSON scanner shared by the safetensors and tenzor adapters (placeholder: the
 * API is being written with the safetensors adapter).
 */
#ifndef INGOT_JSON_H
#define INGOT_JSON_H

#include "deps.h"

#endif
