/* System messages after the first turn (Anthropic "role": "system" entries inside
 * messages, OpenAI system/developer messages mid-conversation): rendered as system turns
 * where the chat template supports them, else folded into the leading system message. */
#ifndef HR_TEMPLATE_SYSTEM_TURNS_H
#define HR_TEMPLATE_SYSTEM_TURNS_H

#include <jansson.h>

#include "base/err.h"
#include "template/template.h"

/* Whether ct renders a system message that follows user and assistant turns in place, as
 * a turn of its own: it renders a probe conversation (user, assistant, system, user) and
 * looks for the system text between the other two. Gemma 3 raises on it (roles must
 * alternate); a template that drops such messages also answers 0. */
int hr_chat_template_system_turns(const hr_chat_template *ct);

/* chat (an hr_api_request.chat object) with every system message after the first
 * non-system one removed and its text appended to the leading system message (created
 * first when there is none), "\n\n" between texts. *out is a new object, or NULL when
 * there was nothing to fold. */
hr_err *hr_chat_fold_system(const json_t *chat, json_t **out);

#endif
