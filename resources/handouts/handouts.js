// The page's behaviour: draw the figures (Vega-Lite, inlined above), ask for a prediction before a reveal, grade it,
// keep the answers in this browser's storage and download them as a CSV. Nothing here reaches the network.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("handout-data").textContent);
  var storageKey = "transformer-explorer-answers:" + document.body.dataset.pageId;
  var CSV_COLUMNS = ["lesson", "step", "title", "prediction", "answer", "result", "time"];

  function loadAnswers() {
    try {
      var stored = JSON.parse(window.localStorage.getItem(storageKey) || "{}");
      return stored && typeof stored === "object" ? stored : {};
    } catch (error) {
      return {};  // storage off (a private window) or unreadable: the page still works, without memory
    }
  }

  var answers = loadAnswers();

  function saveAnswers() {
    try {
      window.localStorage.setItem(storageKey, JSON.stringify(answers));
    } catch (error) {
      // storage off: the answers live until the page closes, and the CSV still downloads them
    }
  }

  function draw(element) {
    if (element.dataset.drawn) {
      return;
    }
    element.dataset.drawn = "pending";
    var spec = data.specs[element.dataset.spec];
    // mode: the specs carry no $schema URL, so that the page names no address at all
    window.vegaEmbed(element, spec, {mode: "vega-lite", actions: false, renderer: "svg"}).then(function () {
      element.dataset.drawn = "yes";
    }).catch(function (error) {
      element.dataset.drawn = "failed";
      element.textContent = "This figure could not be drawn: " + error;
      console.error(error);
    });
  }

  function grade(step, given) {
    var expected = step.answer;
    if (step.prediction.kind === "number") {
      var rounding = 1e-6 * Math.abs(expected);
      return typeof given === "number" && Math.abs(given - expected) <= step.prediction.tolerance + rounding;
    }
    return given === expected;
  }

  function readGiven(form, kind) {
    if (kind === "choice") {
      var picked = form.querySelector("input[type=radio]:checked");
      return picked ? picked.value : null;
    }
    var text = form.querySelector(".prediction-input").value;
    if (kind === "number") {
      var cleaned = text.trim().replace(/,/g, "");
      var value = cleaned === "" ? NaN : Number(cleaned);
      return isFinite(value) ? value : null;
    }
    return text === "" ? null : text;
  }

  function showGrade(section, record) {
    var box = section.querySelector(".grade");
    if (!box) {
      return;
    }
    var step = data.steps[section.dataset.step];
    box.hidden = false;
    box.className = "grade " + record.result;
    if (record.result === "skipped") {
      box.textContent = "Skipped. The app measured: " + step.answer_text + ".";
    } else {
      box.textContent = (record.result === "right" ? "Right: " : "Wrong: ") + "you predicted " + record.prediction +
        "; the app measured " + step.answer_text + ".";
    }
  }

  function committed(section, record) {
    var form = section.querySelector(".prediction-form");
    form.querySelectorAll("input, button").forEach(function (control) {
      control.disabled = true;
    });
    var reveal = section.querySelector(".reveal-button");
    if (reveal) {
      reveal.disabled = false;
      reveal.title = "";
    }
    section.dataset.committed = record.result;
  }

  function record(section, given, result) {
    var step = data.steps[section.dataset.step];
    var entry = {
      lesson: data.lesson, step: Number(section.dataset.step), title: step.title,
      prediction: given === null ? "" : String(given), answer: step.answer_text, result: result,
      time: new Date().toISOString()
    };
    answers[section.dataset.step] = entry;
    saveAnswers();
    committed(section, entry);
  }

  document.querySelectorAll(".step").forEach(function (section) {
    var step = data.steps[section.dataset.step];
    section.querySelectorAll(".figure").forEach(function (element) {
      if (!element.closest(".reveal")) {
        draw(element);
      }
    });
    var reveal = section.querySelector(".reveal-button");
    if (reveal) {
      reveal.addEventListener("click", function () {
        var hidden = section.querySelector(".reveal");
        hidden.hidden = false;
        reveal.hidden = true;
        hidden.querySelectorAll(".figure").forEach(draw);
        if (answers[section.dataset.step]) {
          showGrade(section, answers[section.dataset.step]);
        }
      });
    }
    var form = section.querySelector(".prediction-form");
    if (!form) {
      return;
    }
    var kind = form.dataset.kind;
    form.querySelector(".commit").addEventListener("click", function () {
      var given = readGiven(form, kind);
      if (given === null) {
        form.querySelector(".commit").textContent = kind === "choice" ? "Pick an option, then commit" :
          (kind === "number" ? "Type a number, then commit" : "Type a token, then commit");
        return;
      }
      record(section, given, grade(step, given) ? "right" : "wrong");
    });
    form.querySelector(".skip").addEventListener("click", function () {
      record(section, null, "skipped");
    });
    if (answers[section.dataset.step]) {
      committed(section, answers[section.dataset.step]);
    }
  });

  function csvField(value) {
    return "\"" + String(value).replace(/"/g, "\"\"") + "\"";
  }

  var download = document.getElementById("download-answers");
  if (download) {
    download.addEventListener("click", function () {
      var rows = [CSV_COLUMNS.join(",")];
      Object.keys(answers).sort(function (a, b) { return Number(a) - Number(b); }).forEach(function (key) {
        rows.push(CSV_COLUMNS.map(function (column) { return csvField(answers[key][column]); }).join(","));
      });
      var blob = new Blob([rows.join("\r\n") + "\r\n"], {type: "text/csv"});
      var link = document.createElement("a");
      link.href = URL.createObjectURL(blob);
      link.download = data.file_stem + "-answers.csv";
      document.body.appendChild(link);
      link.click();
      link.remove();
    });
    document.getElementById("clear-answers").addEventListener("click", function () {
      answers = {};
      saveAnswers();
      window.location.reload();
    });
  }
})();
