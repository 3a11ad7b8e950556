/* SPDX-License-Identifier: Apache-2.0 */
/* virtwatt-model train (train.c): argv[0] is "train". Returns the exit status. */
#pragma once

int vw_cmd_train(int argc, char **argv);
