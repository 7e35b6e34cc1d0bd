// Checks the manual's examples name (`javascript: file://checks.js:polite`); tests/test_docs.py puts this
// file beside every example suite it validates.
module.exports.polite = (output, context) => output.includes('您') && output.length >= ((context.config || {}).min_length || 0);
