/*
 * zip.h - read-only zip container reader shared by the .npz and PyTorch adapters (placeholder:
 * the API is being written with the NumPy adapter).
 */
#ifndef INGOT_ZIP_H
#define INGOT_ZIP_H

#include "deps.h"

#endif
