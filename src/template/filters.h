/* Filter functions shared between filters.c and filters_seq.c. Each has the builtin_fn
 * signature with the filtered value as `self`. */
#ifndef HR_TEMPLATE_FILTERS_H
#define HR_TEMPLATE_FILTERS_H

#include "template/internal.h"

hr_err *fret(rt *r, tv *v, tv **out);
/* str(v), with Undefined as "". */
hr_err *as_str(rt *r, tv *v, tv **out);

hr_err *f_items(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_join(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_first(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_last(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_list(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_reverse(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_sort(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_dictsort(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_unique(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_select(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_reject(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_selectattr(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_rejectattr(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_map(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_sum(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_min(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_max(rt *r, tv *x, const targs *a, tv **out);
hr_err *f_batch(rt *r, tv *x, const targs *a, tv **out);

#endif
