// The libgit2 layer in one include: repository.hpp, worktree.hpp, merge.hpp,
// workspace.hpp.
#pragma once

#include "src/git/error.hpp"
#include "src/git/merge.hpp"
#include "src/git/repository.hpp"
#include "src/git/workspace.hpp"
#include "src/git/worktree.hpp"
