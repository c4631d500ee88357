// agent/run_support.h: split by concern (issue 28): agent/model_open.h, agent/moatd_start.h,
// agent/home_workspace.h, agent/steering_input.h, agent/console_question.h (a person's
// answers), agent/visible.h (one_line). Only agent/batch/preflight.cc still includes this
// name, for check_provider; once it includes agent/model_open.h this file goes.
#pragma once

#include "agent/model_open.h"
