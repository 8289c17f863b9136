// The error a stage parameter's resolver throws on a value it refuses (infra/stage-params.cjs and the others): a
// sentence alone, as osls prints a failing resolver's stack.
'use strict';

class StageParameterError extends Error {
  constructor(message) {
    super(message);
    this.name = 'StageParameterError';
    // osls prints a failing resolver's stack: the sentence alone says it all.
    this.stack = message;
  }
}

module.exports = { StageParameterError };
