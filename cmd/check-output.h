/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <json-c/json.h>

#include "checks/check.h"

/* The checks of accept and check as JSON: [{"id", "required", "status", "detail", "attempts",
 * "output"?}, ...] (cmd/accept.c). */
json_object *ks_json_checks(const ks_checklist *l); /* NULL: out of memory */
