// A drop zone for the pages (web/app.js, web/generate.js): highlighted while files hover,
// `onFiles(FileList)` when they are dropped.
export function dropZone(element, onFiles) {
  element.addEventListener('dragover', (e) => { e.preventDefault(); element.classList.add('over'); });
  element.addEventListener('dragleave', () => element.classList.remove('over'));
  element.addEventListener('drop', (e) => {
    e.preventDefault();
    element.classList.remove('over');
    if (e.dataTransfer.files.length) onFiles(e.dataTransfer.files);
  });
}
