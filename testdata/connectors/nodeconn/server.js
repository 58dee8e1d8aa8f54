const tinydep = require("tinydep");
console.log("answer=" + tinydep.answer);
