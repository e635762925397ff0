/*
 * backend_export.h - what the backend box offers the runtime box (src/runtime/) beyond the public
 * header include/ingot/backend.h: rebinding a wrapped host buffer to other memory without
 * allocating, so a model can bind caller memory per call. Not installed; nothing else sees it.
 */
#ifndef INGOT_BACKEND_EXPORT_H
#define INGOT_BACKEND_EXPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "ingot/backend.h"

/* Rebinds a host buffer created by ingot_buffer_wrap to other memory without allocating. Only for
 * host buffers that do not own their memory (ingot_buffer_host() != NULL, made by wrap). */
void ingot__buffer_rebind(ingot_buffer *buf, void *host, size_t n, bool writable);

#endif
