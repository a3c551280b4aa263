/* Filter functions shared between filters.c and filters_seq.c. Each has the builtin_fn
 * signature with the filtered value as `self`. */
#ifndef HR_TEMPLATE_FILTERS_H
#define HR_TEMPLATE_FILTERS_H

#include "template/internal.h"

hr_err *hr_fret(rt *r, tv *v, tv **out);
/* str(v), with Undefined as "". */
hr_err *hr_as_str(rt *r, tv *v, tv **out);

hr_err *hr_f_items(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_join(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_first(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_last(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_list(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_reverse(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_sort(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_dictsort(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_unique(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_select(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_reject(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_selectattr(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_rejectattr(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_map(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_sum(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_min(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_max(rt *r, tv *x, const targs *a, tv **out);
hr_err *hr_f_batch(rt *r, tv *x, const targs *a, tv **out);

#endif
